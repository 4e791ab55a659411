"""Sanity figures for README.md: how far plain retrieval gets on this set, without any polarity logic.
BM25 over word overlap (no model) and, if a sentence-transformers model folder is given, cosine similarity
of its embeddings (the packaged all-MiniLM-L6-v2 folder, nothing downloaded). Run from this folder:

    python plain_baselines.py [MODEL_DIR]
"""

import json
import math
import re
import sys
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
NOTES = [json.loads(line) for line in open(HERE / "notes.jsonl")]
QUESTIONS = [json.loads(line) for line in open(HERE / "questions.jsonl")]
STOP = set(
    "a an the is are does do did has have had of for to in on at with and or not no any that this it its his "
    "her he she what which who how when where can will be there isn't doesn't don't than other without now "
    "these days".split()
)


def tokens(text: str) -> list[str]:
    return [w for w in re.findall(r"[a-z0-9]+", text.lower()) if w not in STOP]


def bm25_scorer():
    df = Counter(w for n in NOTES for w in set(tokens(n["text"])))
    avg = sum(len(tokens(n["text"])) for n in NOTES) / len(NOTES)
    idf = {w: math.log(1 + (len(NOTES) - c + 0.5) / (c + 0.5)) for w, c in df.items()}

    def score(q, n):
        tf = Counter(tokens(n["text"]))
        length = sum(tf.values())
        return sum(
            idf[w] * tf[w] * 2.2 / (tf[w] + 1.2 * (0.25 + 0.75 * length / avg))
            for w in tokens(q["question"])
            if w in tf
        )

    return score


def report(name, score) -> None:
    for split in ("dev", "heldout", "all"):
        hit, total = Counter(), Counter()
        for q in QUESTIONS:
            if not q["answer_notes"] or split not in ("all", q["split"]):
                continue
            ranked = [n["id"] for n in sorted(NOTES, key=lambda n: -score(q, n))]
            for t in (q["type"], "answerable"):
                total[t] += 1
                hit[t, "first"] += ranked[0] == q["answer_notes"][0]
                hit[t, "at5"] += any(i in ranked[:5] for i in q["answer_notes"])
                if q["contradicting_notes"]:
                    total[t, "c"] += 1
                    hit[t, "c3"] += any(i in ranked[:3] for i in q["contradicting_notes"])
        for t in ("negated", "affirmative", "presence", "answerable"):
            print(
                f"{name:7} {split:8} {t:12} n={total[t]:3}  best note first {hit[t, 'first'] / total[t]:.2f}  "
                f"an answer note in top 5 {hit[t, 'at5'] / total[t]:.2f}  "
                f"contradicting in top 3 {hit[t, 'c3'] / max(1, total[t, 'c']):.2f} of {total[t, 'c']}"
            )


def main() -> None:
    report("bm25", bm25_scorer())
    if len(sys.argv) > 1:
        from sentence_transformers import SentenceTransformer

        model = SentenceTransformer(sys.argv[1], device="cpu")
        notes = model.encode([n["text"] for n in NOTES], normalize_embeddings=True)
        questions = model.encode([q["question"] for q in QUESTIONS], normalize_embeddings=True)
        row = {n["id"]: i for i, n in enumerate(NOTES)}
        col = {q["id"]: i for i, q in enumerate(QUESTIONS)}
        report("minilm", lambda q, n: float(questions[col[q["id"]]] @ notes[row[n["id"]]]))


if __name__ == "__main__":
    main()
