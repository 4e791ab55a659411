"""Agent memory, measured as an agent developer meets it (issue 52): `polarmem mcp` driven by the
official MCP SDK client over stdio, text notes only, nothing declared, every tool at its defaults
(the namespace made by `polarmem namespace create`, as docs/agents.md says), beside plain
similarity on the same notes with the same all-MiniLM-L6-v2 weights: PolarMem's own mode off
(include_neutral) and Chroma (chromadb, in process, cosine).

Two sets, each split dev / held-out (settings are chosen on dev; held-out is reported):

* tests/data/agent_memory: notes about a dozen people and projects, questions typed negated /
  affirmative / presence (answered yes, no or unknown) / absent (not in the memory). Reported: right
  note first, right note in what the model sees (the top 5), a contradicting note shown
  unlabelled or labelled VERIFIED, presence questions answered no whose answering note is shown
  as verified absence (ANSWERS_NO), a VERIFIED hit on absent questions, the stored states against
  the labels (accuracy, NOT_HAS recall).
* tests/data/conversations: multi-session conversations' observation notes (one namespace per
  conversation), questions with evidence turns. Reported: evidence in the top 5 / 10, a VERIFIED
  hit on adversarial questions (never happened, or to another person), answerable questions whose
  top 5 holds an evidence note labelled VERIFIED (or any verified answer).

Also the server's CPU per MCP recall at the defaults (/proc of the server process).

    .venv/bin/python benchmarks/agent_memory.py [--sets notes,conversations] [--split dev|heldout|all]

Writes benchmarks/results/agent-memory.json (or --out). Needs the [mcp] and [embed] extras and
chromadb (`pip install chromadb==1.5.9`, the bench extra)."""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
from servertools import serve_in_background, stop_process  # noqa: E402

DATA = ROOT / "tests" / "data"
RESULTS = ROOT / "benchmarks" / "results" / "agent-memory.json"
VERIFIED_ANSWERS = {"VERIFIED", "ANSWERS_NO", "CONSTRAINT"}
TOP_K = 5  # the recall tool's default
# The product at its defaults; its own plain similarity; the defaults before issue 52 (the
# namespace's rule, hard, with NEUTRAL / CONFLICT hits cut when one is VERIFIED); the peer.
SYSTEMS = ("polarmem", "polarmem_off_include_neutral", "polarmem_before_hard_cut", "chroma")


def jsonl(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def host() -> dict:
    flags = Path("/proc/cpuinfo").read_text() if Path("/proc/cpuinfo").exists() else ""
    return {
        "cpu_count": os.cpu_count(),
        "avx2": " avx2" in flags,
        "avx512_vnni": " avx512_vnni" in flags,
        "load_average_at_start": [round(x, 2) for x in os.getloadavg()],
        "python": platform.python_version(),
    }


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def share(numerator: int, denominator: int) -> float | None:
    return round(numerator / denominator, 4) if denominator else None


class Chroma:
    """Plain similarity, the peer: Chroma with the same MiniLM weights (sentence-transformers on the
    packaged checkpoint, nothing downloaded)."""

    def __init__(self) -> None:
        import chromadb
        from sentence_transformers import SentenceTransformer

        from polarmem_server.scoring.minilm_checkpoint import model_dir

        self.model = SentenceTransformer(str(model_dir()), device="cpu")
        self.client = chromadb.EphemeralClient()

    def load(self, name: str, notes: list[dict]) -> None:
        collection = self.client.create_collection(name, metadata={"hnsw:space": "cosine"})
        texts = [n["text"] for n in notes]
        collection.add(
            ids=[n["id"] for n in notes],
            documents=texts,
            embeddings=self.model.encode(texts, normalize_embeddings=True).tolist(),
        )

    def query(self, name: str, question: str, k: int) -> list[str]:
        collection = self.client.get_collection(name)
        vector = self.model.encode([question], normalize_embeddings=True).tolist()
        return collection.query(query_embeddings=vector, n_results=k)["ids"][0]


class PolarMem:
    """`polarmem serve` and one `polarmem mcp` per namespace (stdio, the MCP SDK client)."""

    def __init__(self, data_dir: Path) -> None:
        self.polarmem = str(Path(sys.executable).with_name("polarmem"))
        env = {k: v for k, v in os.environ.items() if not k.startswith("POLARMEM_")}
        self.server, self.address = serve_in_background(
            [self.polarmem, "serve", "--address", "127.0.0.1:0", "--data-dir", str(data_dir), "--metrics-port", "-1"],
            env,
        )

    def create(self, name: str) -> None:
        subprocess.run(
            [self.polarmem, "namespace", "create", name, "--address", self.address], check=True, capture_output=True
        )

    def session(self, name: str):
        from mcp import Client
        from mcp.client.stdio import StdioServerParameters

        return Client(StdioServerParameters(command=self.polarmem, args=["mcp", "-n", name, "--address", self.address]))

    def close(self) -> None:
        stop_process(self.server)


async def call(client, tool: str, arguments: dict) -> dict:
    result = await client.call_tool(tool, arguments)
    if result.is_error:
        raise RuntimeError(f"{tool} {arguments}: {result.content[0].text}")
    return result.structured_content


async def remember_all(client, notes: list[dict]) -> None:
    for note in sorted(notes, key=lambda n: (n["date"], n["id"])):  # a newer note is remembered later
        await call(client, "remember", {"id": note["id"], "text": note["text"]})


def state_figures(items: dict[str, dict], notes: list[dict]) -> dict:
    """Stored states against the labels: every labelled (note, concept, state) pair, and how many
    stored states the labels do not have (a fabricated HAS or NOT_HAS of a labelled-absent word)."""
    right = pairs = not_has = not_has_found = fabricated = 0
    for note in notes:
        item = items[note["id"]]
        stored = {c: "has" for c in item["has"]} | {c: "not_has" for c in item["not_has"]}
        for concept, label in [(c, "has") for c in note["has"]] + [(c, "not_has") for c in note["not_has"]]:
            pairs += 1
            right += stored.get(concept) == label
            if label == "not_has":
                not_has += 1
                not_has_found += stored.get(concept) == "not_has"
        fabricated += sum(1 for c in note.get("no_state", []) if c in stored)
    return {
        "labelled_pairs": pairs,
        "state_accuracy": share(right, pairs),
        "not_has_recall": share(not_has_found, not_has),
        "fabricated_states_on_no_state_words": fabricated,
    }


async def agent_notes(polarmem: PolarMem, chroma: Chroma, split: str) -> dict:
    notes = [n for n in jsonl(DATA / "agent_memory" / "notes.jsonl") if split in ("all", n["split"])]
    questions = [q for q in jsonl(DATA / "agent_memory" / "questions.jsonl") if split in ("all", q["split"])]
    name = f"notes-{split}"
    polarmem.create(name)
    chroma.load(name, notes)
    systems = {s: defaultdict(int) for s in SYSTEMS}
    async with polarmem.session(name) as client:
        await remember_all(client, notes)
        items = {n["id"]: await call(client, "get_item", {"id": n["id"]}) for n in notes}
        await call(client, "recall", {"query": questions[0]["question"]})  # warm
        cpu_before, started = cpu_seconds(polarmem.server.pid), time.perf_counter()
        default_bodies = [await call(client, "recall", {"query": q["question"]}) for q in questions]
        cpu = cpu_seconds(polarmem.server.pid) - cpu_before  # every question encoded once: cold
        wall = time.perf_counter() - started
        off_bodies = [
            await call(client, "recall", {"query": q["question"], "mode": "off", "include_neutral": True})
            for q in questions
        ]
        hard_bodies = [await call(client, "recall", {"query": q["question"], "mode": "hard"}) for q in questions]
        # the recall path alone, each mode with its query's encoding already cached (the modes
        # embed different texts: a fair comparison needs both warm)
        warm = {}
        for mode in ("answer", "hard"):
            cpu_before = cpu_seconds(polarmem.server.pid)
            for q in questions:
                await call(client, "recall", {"query": q["question"], "mode": mode})
            warm[mode] = round(1000 * (cpu_seconds(polarmem.server.pid) - cpu_before) / len(questions), 2)
    examples = []
    for q, default, off, hard in zip(questions, default_bodies, off_bodies, hard_bodies):
        shown = {
            "polarmem": [(h["id"], h["status"]) for h in default["hits"]],
            "polarmem_off_include_neutral": [(h["id"], "") for h in off["hits"]],
            "polarmem_before_hard_cut": [(h["id"], h["status"]) for h in hard["hits"]],
            "chroma": [(i, "") for i in chroma.query(name, q["question"], TOP_K)],
        }
        for system, hits in shown.items():
            count_question(
                systems[system], q, hits, answer_summary=default.get("context", "") if system == "polarmem" else ""
            )
        if shown["polarmem"] and shown["polarmem"][0][0] not in q["answer_notes"] and q["answer_notes"]:
            examples.append(
                {
                    "question": q["question"],
                    "type": q["type"],
                    "answer_notes": q["answer_notes"],
                    "polarmem_top": [
                        f"{h['id']} {h.get('answer', h['status'])} {h['s_sem']:.3f}" for h in default["hits"][:3]
                    ],
                    "chroma_top": [i for i, _ in shown["chroma"][:3]],
                }
            )
    return {
        "notes": len(notes),
        "questions": len(questions),
        "by_type": dict(_count_types(questions)),
        "systems": {system: summarise(counts) for system, counts in systems.items()},
        "states": state_figures(items, notes),
        "server_cpu_ms_per_mcp_recall": round(1000 * cpu / len(questions), 2),
        "server_cpu_ms_per_mcp_recall_encoding_cached": warm,
        "client_wall_ms_per_mcp_recall": round(1000 * wall / len(questions), 2),
        "polarmem_misses": examples,
    }


def _count_types(questions: list[dict]) -> dict:
    counts: dict = defaultdict(int)
    for q in questions:
        counts[q["type"] + ("_" + q["answer"] if q["type"] == "presence" and q.get("answer") else "")] += 1
    return counts


def count_question(c: dict, q: dict, hits: list[tuple[str, str]], answer_summary: str = "") -> None:
    ids = [i for i, _ in hits]
    status = dict(hits)
    answers = q["answer_notes"]
    if answers:
        c["answerable"] += 1
        c["right_first"] += bool(ids) and ids[0] in answers
        c["right_shown"] += any(i in answers for i in ids)
        c[f"right_first:{q['type']}"] += bool(ids) and ids[0] in answers
        c[f"answerable:{q['type']}"] += 1
    if q.get("contradicting_notes"):
        c["with_contradiction"] += 1
        # shown unlabelled (a peer), or labelled VERIFIED
        c["contradiction_shown_unlabelled_or_verified"] += any(
            i in q["contradicting_notes"] and status[i] in ("", "VERIFIED") for i in ids
        )
    if q["type"] == "presence" and q.get("answer") == "no":
        c["presence_no"] += 1
        c["presence_no_answer_shown_as_absence"] += any(i in answers and status[i] == "ANSWERS_NO" for i in ids)
        c["presence_no_answer_shown"] += any(i in answers for i in ids)
    if q["type"] == "absent":
        c["absent"] += 1
        c["absent_with_verified_hit"] += any(s == "VERIFIED" for s in status.values())
        c["absent_told_no_verified_evidence"] += "no verified evidence" in answer_summary


def summarise(c: dict) -> dict:
    out = {
        "right_note_first": share(c["right_first"], c["answerable"]),
        "right_note_in_top5": share(c["right_shown"], c["answerable"]),
        "contradiction_shown_unlabelled_or_verified": share(
            c["contradiction_shown_unlabelled_or_verified"], c["with_contradiction"]
        ),
        "presence_no_shown_as_verified_absence": share(c["presence_no_answer_shown_as_absence"], c["presence_no"]),
        "presence_no_answer_in_top5": share(c["presence_no_answer_shown"], c["presence_no"]),
        "absent_questions_with_a_verified_hit": share(c["absent_with_verified_hit"], c["absent"]),
        "absent_questions_told_no_verified_evidence": share(c["absent_told_no_verified_evidence"], c["absent"]),
    }
    out["right_note_first_by_type"] = {
        key.split(":")[1]: share(c[key], c["answerable:" + key.split(":")[1]])
        for key in sorted(c)
        if key.startswith("right_first:")
    }
    return out


async def conversations(polarmem: PolarMem, chroma: Chroma, split: str) -> dict:
    observations = jsonl(DATA / "conversations" / "observations.jsonl")
    questions = [q for q in jsonl(DATA / "conversations" / "questions.jsonl") if split in ("all", q["split"])]
    by_conversation: dict = defaultdict(list)
    for q in questions:
        by_conversation[q["conversation"]].append(q)
    turns_of = {o["id"]: set(o["turn_ids"]) for o in observations}
    counts = {s: defaultdict(int) for s in SYSTEMS}
    cpu = 0.0
    calls = 0
    for conversation, asked in sorted(by_conversation.items()):
        notes = [o for o in observations if o["conversation"] == conversation]
        name = f"conv-{conversation}"
        polarmem.create(name)
        chroma.load(name, notes)
        async with polarmem.session(name) as client:
            await remember_all(client, notes)
            before = cpu_seconds(polarmem.server.pid)
            at5 = [await call(client, "recall", {"query": q["question"]}) for q in asked]
            cpu += cpu_seconds(polarmem.server.pid) - before
            calls += len(asked)
            at10 = [await call(client, "recall", {"query": q["question"], "top_k": 10}) for q in asked]
            off5 = [
                await call(client, "recall", {"query": q["question"], "mode": "off", "include_neutral": True})
                for q in asked
            ]
            off10 = [
                await call(
                    client, "recall", {"query": q["question"], "mode": "off", "include_neutral": True, "top_k": 10}
                )
                for q in asked
            ]
            hard5 = [await call(client, "recall", {"query": q["question"], "mode": "hard"}) for q in asked]
            hard10 = [
                await call(client, "recall", {"query": q["question"], "mode": "hard", "top_k": 10}) for q in asked
            ]
        for i, q in enumerate(asked):
            chroma10 = chroma.query(name, q["question"], 10)
            lists = {
                "polarmem": ([(h["id"], h["status"]) for h in at5[i]["hits"]], [h["id"] for h in at10[i]["hits"]]),
                "polarmem_off_include_neutral": (
                    [(h["id"], "") for h in off5[i]["hits"]],
                    [h["id"] for h in off10[i]["hits"]],
                ),
                "polarmem_before_hard_cut": (
                    [(h["id"], h["status"]) for h in hard5[i]["hits"]],
                    [h["id"] for h in hard10[i]["hits"]],
                ),
                "chroma": ([(x, "") for x in chroma10[:5]], chroma10),
            }
            for system, (top5, top10) in lists.items():
                count_conversation(counts[system], q, top5, top10, turns_of)
    return {
        "conversations": len(by_conversation),
        "questions": len(questions),
        "systems": {s: summarise_conversation(c) for s, c in counts.items()},
        "server_cpu_ms_per_mcp_recall": round(1000 * cpu / calls, 2) if calls else None,
    }


def count_conversation(c: dict, q: dict, top5: list[tuple[str, str]], top10: list[str], turns_of: dict) -> None:
    evidence = set(q["evidence"])
    status = dict(top5)
    if q["category"] == "adversarial":
        c["adversarial"] += 1
        c["adversarial_with_verified_hit"] += any(s == "VERIFIED" for s in status.values())
        return
    c["answerable"] += 1
    holds = [i for i, _ in top5 if turns_of[i] & evidence]
    c["evidence_at5"] += bool(holds)
    c["evidence_at10"] += any(turns_of[i] & evidence for i in top10)
    if holds:
        c["evidence_in_top5"] += 1
        c["evidence_labelled_verified"] += any(status[i] == "VERIFIED" for i in holds)
        c["evidence_labelled_verified_answer"] += any(status[i] in VERIFIED_ANSWERS for i in holds)


def summarise_conversation(c: dict) -> dict:
    return {
        "evidence_recall_at5": share(c["evidence_at5"], c["answerable"]),
        "evidence_recall_at10": share(c["evidence_at10"], c["answerable"]),
        "adversarial_with_a_verified_hit": share(c["adversarial_with_verified_hit"], c["adversarial"]),
        "evidence_in_top5_labelled_verified": share(c["evidence_labelled_verified"], c["evidence_in_top5"]),
        "evidence_in_top5_labelled_a_verified_answer": share(
            c["evidence_labelled_verified_answer"], c["evidence_in_top5"]
        ),
    }


async def main_async(args) -> dict:
    report: dict = {"host": host(), "split": args.split}
    data_dir = Path(tempfile.mkdtemp(prefix="polarmem-agent-memory-"))
    polarmem = PolarMem(data_dir)
    try:
        chroma = Chroma()
        if "notes" in args.sets:
            report["agent_notes"] = await agent_notes(polarmem, chroma, args.split)
        if "conversations" in args.sets:
            report["conversations"] = await conversations(polarmem, chroma, args.split)
    finally:
        polarmem.close()
        shutil.rmtree(data_dir, ignore_errors=True)
    report["host"]["load_average_at_end"] = [round(x, 2) for x in os.getloadavg()]
    return report


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sets", default="notes,conversations")
    parser.add_argument("--split", choices=("dev", "heldout", "all"), default="dev")
    parser.add_argument("--out", type=Path, default=None, help=f"default: {RESULTS.relative_to(ROOT)} (with the split)")
    args = parser.parse_args()
    report = asyncio.run(main_async(args))
    out = args.out or RESULTS.with_name(f"agent-memory-{args.split}.json")
    out.write_text(json.dumps(report, indent=1) + "\n")
    print(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
