"""States and negated queries over short agent notes (tests/data/agent_notes/): how well PolarMem
reads what a note affirms and what it negates, and whether negated questions get conflicting notes.

Each note is labelled with the nouns it affirms and the nouns it explicitly negates
(tests/data/agent_notes/README.md has the rules). Figures, per split (dev / heldout) and overall:

* **state accuracy** — labelled (note, noun) pairs read with the label's polarity (HAS for an
  affirmed noun, NOT_HAS for a negated one, no state for an ``unstated`` one: a hedge, another
  person's fact, by the README's state convention); an affirmed or negated noun read as neither
  counts wrong; **unstated right** — unstated pairs read with no state;
* **negated recall** — negated pairs read as NOT_HAS; **affirmed recall** likewise;
* **fabricated states** — HAS / NOT_HAS on a noun of the set's vocabulary that the note is not
  labelled with (every noun against every note it is not labelled in);
* **Conflict@3** — share of the negated queries whose top 3 hold a note that, by the labels,
  affirms a forbidden noun or negates a required one; **relevant@3** — mean share of the top 3
  that affirm every required noun (a query split by its own hash).

Ways of reading states (``--mode``):

* ``parser`` — ``text.parse(note, Vocabulary(every labelled noun)).polarity()``, as
  benchmarks/clinical_negation.py does: the reference with a declared vocabulary. Its top 3 come
  from a plain filter over those parsed states (not the server's recall): the query is parsed with
  the same vocabulary; a note is dropped if it affirms a negated query noun or negates an
  affirmed one, the rest ranked by how many affirmed query nouns they affirm (ties by id, at
  least one needed);
* ``memory`` — through the library on a real on-disk store: ``Memory(tmpdir)``, one namespace,
  each note remembered as a text item, states read back from ``get_item(...).evidence``, queries
  run with ``recall(text=query, k=3)`` (the namespace's default rule). ``--vocabulary``:
  ``declared`` (``concepts=`` every labelled noun), ``none`` (no concepts) or ``open``
  (``open_vocabulary=True``, skipped where NamespaceSettings has no such field yet), or ``engine``
  (the declared vocabulary, and each note remembered with ``verify_concepts`` through the server's
  lexical engine: its labelled nouns plus ``ENGINE_DISTRACTORS`` nouns of other notes, which it
  never mentions — the path on which issue 31 found fabricated states).

Results are merged into benchmarks/results/agent_notes.json under "<mode>" / "memory-<vocabulary>".
The trigger table must not be tuned on these figures except by reading the dev rows
(``--errors dev``); heldout rows are reported, never read for tuning.

    python benchmarks/agent_notes.py --mode parser --errors dev
    python benchmarks/agent_notes.py --mode memory --vocabulary declared
    python benchmarks/agent_notes.py --mode memory --vocabulary none
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "tests" / "data" / "agent_notes"
OUT = ROOT / "benchmarks" / "results" / "agent_notes.json"
SPLITS = ("dev", "heldout", "all")
ENGINE_DISTRACTORS = 8


def read_jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


class Reading:
    """What one way of reading produced: per note, noun -> "affirmed" | "negated" for the set's
    nouns it read a state for; `other` counts states on concepts outside the set's vocabulary;
    `top3` per query id."""

    def __init__(self) -> None:
        self.states: dict[str, dict[str, str]] = {}
        self.other: dict[str, int] = {}
        self.top3: dict[str, list[str]] = {}
        self.info: dict[str, object] = {}


def read_parser(notes: list[dict], queries: list[dict], nouns: list[str]) -> Reading:
    from polarmem_server.domain import text
    from polarmem_server.domain.vocabulary import Vocabulary

    vocabulary = Vocabulary(nouns)
    reading = Reading()
    parsed = {}
    for note in notes:
        polarity = text.parse(note["text"], vocabulary).polarity()
        parsed[note["id"]] = polarity
        reading.states[note["id"]] = {
            vocabulary.name(c): "negated" if neg else "affirmed" for c, neg in polarity.items()
        }
        reading.other[note["id"]] = 0
    for q in queries:
        polarity = text.parse(q["query"], vocabulary).polarity()
        wanted = {c for c, neg in polarity.items() if not neg}
        excluded = {c for c, neg in polarity.items() if neg}
        ranked = []
        for note in notes:
            p = parsed[note["id"]]
            if any(p.get(c) is False for c in excluded) or any(p.get(c) is True for c in wanted):
                continue
            score = sum(p.get(c) is False for c in wanted)
            if score:
                ranked.append((-score, note["id"]))
        reading.top3[q["id"]] = [i for _, i in sorted(ranked)[:3]]
    reading.info["ranking"] = "filter over parsed states (see the module doc)"
    return reading


def read_memory(
    notes: list[dict], queries: list[dict], nouns: list[str], vocabulary_mode: str, encoder: str
) -> Reading | None:
    from polarmem.common.v1 import enums_pb2
    from polarmem_server.domain.items import ItemInput
    from polarmem_server.library.memory import Memory, NamespaceSettings

    fields = {f.name for f in dataclasses.fields(NamespaceSettings)}
    options: dict[str, object] = {"encoder": encoder}
    if encoder == "none":
        options["spaces"] = ()
    verifier = None
    if vocabulary_mode in ("declared", "engine"):
        options["concepts"] = tuple(nouns)
    if vocabulary_mode == "engine":
        from polarmem_server.scoring import create_engine
        from polarmem_server.scoring.verification import Verifier

        verifier = Verifier(create_engine("lexical"), max_delay_ms=0.0)
    elif vocabulary_mode == "open":
        if "open_vocabulary" not in fields:
            print("memory-open: NamespaceSettings has no open_vocabulary field yet; skipped", file=sys.stderr)
            return None
        options["open_vocabulary"] = True
    if vocabulary_mode != "open" and "open_vocabulary" in fields:
        options["open_vocabulary"] = False  # namespaces are open by default: the other modes read declared names only
    has, not_has = enums_pb2.CONCEPT_STATE_HAS, enums_pb2.CONCEPT_STATE_NOT_HAS
    reading = Reading()
    with tempfile.TemporaryDirectory(prefix="agent_notes_") as tmp:
        m = Memory(tmp, verifier=verifier)
        try:
            m.create_namespace(NamespaceSettings(name="notes", **options))
            started = time.perf_counter()
            for i, note in enumerate(notes):
                verify: list[str] = []
                if verifier is not None:  # its own nouns, and nouns of other notes it never mentions
                    own = note["affirmed"] + note["negated"]
                    others = [n for n in nouns[(i * 7) % len(nouns) :] + nouns if n not in own]
                    verify = own + others[:ENGINE_DISTRACTORS]
                m.remember("notes", ItemInput(id=note["id"], kind="text", text=note["text"], verify_concepts=verify))
            reading.info["remember_s"] = round(time.perf_counter() - started, 2)
            vocabulary = m.namespace("notes").vocabulary
            reading.info["vocabulary_size"] = len(vocabulary)
            for note in notes:
                states, other = {}, 0
                for ev in m.get_item("notes", note["id"]).evidence:
                    if ev.state not in (has, not_has):
                        continue
                    name = vocabulary.name(ev.concept_id)
                    noun = (
                        next((n for n in nouns if vocabulary.lookup(n) == ev.concept_id), None)
                        if name not in nouns
                        else name
                    )
                    if noun is None:
                        other += 1
                    else:
                        states[noun] = "negated" if ev.state == not_has else "affirmed"
                reading.states[note["id"]] = states
                reading.other[note["id"]] = other
            started = time.perf_counter()
            for q in queries:
                result = m.recall("notes", text=q["query"], k=3)
                reading.top3[q["id"]] = [hit.item_id for hit in result.hits[:3]]
            reading.info["recall_s"] = round(time.perf_counter() - started, 2)
        finally:
            m.close()
    return reading


def labels_of(note: dict) -> dict[str, str]:
    """noun -> "affirmed" | "negated" | "unstated" (mentioned, with no state about the note's
    subject: a hedge, another person's fact; README.md's state convention)."""
    return (
        {n: "affirmed" for n in note["affirmed"]}
        | {n: "negated" for n in note["negated"]}
        | {n: "unstated" for n in note.get("unstated", [])}
    )


def score(notes: list[dict], queries: list[dict], nouns: list[str], reading: Reading) -> dict:
    by_id = {n["id"]: n for n in notes}
    acc: dict[str, dict[str, int]] = {s: defaultdict(int) for s in SPLITS}
    for note in notes:
        read = reading.states[note["id"]]
        labelled = labels_of(note)
        for split in (note["split"], "all"):
            a = acc[split]
            a["notes"] += 1
            for noun, label in labelled.items():
                got = read.get(noun, "missed")
                a["pairs"] += 1
                a["correct"] += got == label or (label == "unstated" and got == "missed")
                if label == "unstated":  # mentioned with no state about the subject: right when none is read
                    a["unstated_pairs"] += 1
                    a["unstated_correct"] += got == "missed"
                    continue
                a[f"{label}_pairs"] += 1
                a[f"{label}_correct"] += got == label
                a["missed"] += got == "missed"
            a["fabricated"] += sum(1 for noun in read if noun not in labelled)
            a["other_states"] += reading.other.get(note["id"], 0)
    for q in queries:
        top = [by_id[i] for i in reading.top3.get(q["id"], []) if i in by_id]
        conflict = any(set(q["forbidden"]) & set(n["affirmed"]) or set(q["required"]) & set(n["negated"]) for n in top)
        relevant = sum(set(q["required"]) <= set(n["affirmed"]) for n in top) / 3
        for split in (q["split"], "all"):
            a = acc[split]
            a["queries"] += 1
            a["conflicts"] += conflict
            a["relevant_sum"] += relevant
            a["short_top3"] += len(top) < 3
    out = {}
    for split, a in acc.items():
        out[split] = {
            "notes": a["notes"],
            "pairs": a["pairs"],
            "negated_pairs": a["negated_pairs"],
            "state_accuracy": round(a["correct"] / max(1, a["pairs"]), 4),
            "negated_recall": round(a["negated_correct"] / max(1, a["negated_pairs"]), 4),
            "affirmed_recall": round(a["affirmed_correct"] / max(1, a["affirmed_pairs"]), 4),
            "unstated_pairs": a["unstated_pairs"],
            "unstated_right": round(a["unstated_correct"] / max(1, a["unstated_pairs"]), 4),
            "missed": a["missed"],
            "fabricated_states": a["fabricated"],
            "other_states": a["other_states"],
            "queries": a["queries"],
            "conflict_at_3": round(a["conflicts"] / max(1, a["queries"]), 4),
            "relevant_at_3": round(a["relevant_sum"] / max(1, a["queries"]), 4),
            "queries_short_of_3": a["short_top3"],
        }
    return out


def print_errors(split: str, notes: list[dict], queries: list[dict], reading: Reading, name: str) -> None:
    by_id = {n["id"]: n for n in notes}
    print(f"\n# {name}: wrong pairs and fabricated states, {split} split", file=sys.stderr)
    for note in notes:
        if note["split"] != split:
            continue
        read = reading.states[note["id"]]
        labelled = labels_of(note)
        wrong = [
            f"{n} {label}->{read.get(n, 'missed')}"
            for n, label in labelled.items()
            if read.get(n, "missed") != label and not (label == "unstated" and n not in read)
        ]
        wrong += [f"{n} unlabelled->{state}" for n, state in read.items() if n not in labelled]
        if wrong:
            print(f"  {note['id']} [{'; '.join(wrong)}] {note['text']}", file=sys.stderr)
    print(f"# {name}: conflicting top 3, {split} split queries", file=sys.stderr)
    for q in queries:
        if q["split"] != split:
            continue
        bad = [
            i
            for i in reading.top3.get(q["id"], [])
            if set(q["forbidden"]) & set(by_id[i]["affirmed"]) or set(q["required"]) & set(by_id[i]["negated"])
        ]
        if bad:
            print(
                f"  {q['id']} {q['query']!r}: " + "; ".join(f"{i} {by_id[i]['text']!r}" for i in bad), file=sys.stderr
            )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mode", choices=["parser", "memory", "all"], default="parser")
    parser.add_argument(
        "--vocabulary",
        choices=["declared", "none", "open", "engine", "all"],
        default="declared",
        help="memory mode: the namespace's vocabulary",
    )
    parser.add_argument(
        "--encoder", choices=["minilm", "none"], default="minilm", help="memory mode: the namespace encoder"
    )
    parser.add_argument(
        "--errors", choices=["dev", "heldout"], help="print the wrong rows of this split (tune on dev only)"
    )
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    notes, queries = read_jsonl(DATA / "notes.jsonl"), read_jsonl(DATA / "queries.jsonl")
    nouns = sorted({n for note in notes for n in note["affirmed"] + note["negated"] + note.get("unstated", [])})
    runs: list[tuple[str, Reading | None]] = []
    if args.mode in ("parser", "all"):
        runs.append(("parser", read_parser(notes, queries, nouns)))
    if args.mode in ("memory", "all"):
        for vocabulary_mode in (
            ["declared", "none", "open", "engine"] if args.vocabulary == "all" else [args.vocabulary]
        ):
            name = f"memory-{vocabulary_mode}" + ("" if args.encoder == "minilm" else f"-encoder-{args.encoder}")
            runs.append((name, read_memory(notes, queries, nouns, vocabulary_mode, args.encoder)))
    report = json.loads(args.out.read_text()) if args.out.exists() else {}
    report["data"] = "tests/data/agent_notes/notes.jsonl, queries.jsonl"
    results = report.setdefault("results", {})
    print(
        f"{'reading':<18} {'split':<8} {'pairs':>5} {'neg':>4} {'accuracy':>8} {'neg.rec':>7} {'aff.rec':>7} "
        f"{'missed':>6} {'fabric.':>7} {'queries':>7} {'confl@3':>7} {'rel@3':>6}"
    )
    for name, reading in runs:
        if reading is None:
            results[name] = {"skipped": "NamespaceSettings has no open_vocabulary field in this checkout"}
            continue
        splits = score(notes, queries, nouns, reading)
        results[name] = {"splits": splits, "info": reading.info}
        for split, m in splits.items():
            print(
                f"{name:<18} {split:<8} {m['pairs']:>5} {m['negated_pairs']:>4} {m['state_accuracy']:>8.3f} "
                f"{m['negated_recall']:>7.3f} {m['affirmed_recall']:>7.3f} {m['missed']:>6} {m['fabricated_states']:>7} "
                f"{m['queries']:>7} {m['conflict_at_3']:>7.3f} {m['relevant_at_3']:>6.3f}"
            )
        if args.errors:
            print_errors(args.errors, notes, queries, reading, name)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
