"""Are the recall labels true of the note for the question? Hand-written QA passes, replayed as an
agent meets them: `polarmem serve`, one namespace per pass made by `polarmem namespace create`, the
MCP SDK's stdio client against `polarmem mcp`, text only, tool defaults (agent_memory.PolarMem).

Each pass (benchmarks/qa/label_passes_r47.json, one file per round) holds notes and questions with
the label the first note shown should carry: VERIFIED or ANSWERS NO, "none" where the context
should be headed "no verified evidence", "any" where the reading is open (left out of the count).
Reported per pass and, per file, for the passes written to find rules (tuning data, as dev is)
apart from those written after them:

* labels as expected, of the questions with an expectation;
* questions whose answer is not stored that were given a verified answer (any label);
* questions for which the note plain similarity ranks first (mode off, top 1) was among those shown.

Usage: python benchmarks/label_passes.py [--passes FILE ...] [--out FILE] [--show]"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from agent_memory import PolarMem, call  # noqa: E402
from harness import host, write_report  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
PASSES = [ROOT / "benchmarks" / "qa" / f"label_passes_r{n}.json" for n in (47, 48)]


def first_label(context: str) -> str:
    """The label the context opens with: "none" for "no verified evidence", else the first note's."""
    head = context.splitlines()[0] if context else ""
    if head.startswith("(no verified evidence"):
        return "none"
    return head.split("[Fact Check: ", 1)[1].split(":", 1)[0] if "[Fact Check: " in head else "none"


async def replay(memory: PolarMem, name: str, one: dict, show: bool) -> dict:
    counts: dict = defaultdict(int)
    async with memory.session(name) as client:
        for i, text in enumerate(one["notes"]):
            await call(client, "remember", {"id": f"n{i:03d}", "text": text})
        for asked in one["questions"]:
            shown = await call(client, "recall", {"query": asked["question"]})
            plain = await call(
                client, "recall", {"query": asked["question"], "mode": "off", "include_neutral": True, "top_k": 1}
            )
            label = first_label(shown["context"])
            counts["questions"] += 1
            counts["plain_first_shown"] += plain["hits"][0]["id"] in [h["id"] for h in shown["hits"]]
            if not asked["answer_stored"]:
                counts["answer_absent"] += 1
                counts["absent_given_an_answer"] += label != "none"
            if asked["expect"] != "any":
                counts["judged"] += 1
                counts["as_expected"] += label == asked["expect"]
                if show and label != asked["expect"]:
                    print(f"  {name}: {asked['question']!r}: {label} (expected {asked['expect']})")
    return dict(counts)


def summary(rows: list[dict]) -> dict:
    total: dict = defaultdict(int)
    for row in rows:
        for key, value in row.items():
            total[key] += value
    return {
        **total,
        "labels_as_expected": round(total["as_expected"] / max(1, total["judged"]), 4),
        "absent_given_an_answer_share": round(total["absent_given_an_answer"] / max(1, total["answer_absent"]), 4),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--passes", type=Path, nargs="+", default=PASSES)
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "label_passes.json")
    parser.add_argument("--show", action="store_true", help="print each question whose label is not the expected one")
    args = parser.parse_args()
    passes = [{**one, "file": path.stem} for path in args.passes for one in json.loads(path.read_text())["passes"]]
    with tempfile.TemporaryDirectory() as tmp:
        memory = PolarMem(Path(tmp))
        try:
            by_pass = {}
            for one in passes:
                name = f"qa-{one['name']}"
                memory.create(name)
                by_pass[one["name"]] = asyncio.run(replay(memory, name, one, args.show))
        finally:
            memory.close()
    report = {
        "passes": [str(path.relative_to(ROOT) if path.is_relative_to(ROOT) else path) for path in args.passes],
        "by_pass": by_pass,
        "by_kind": {
            f"{file}: {kind}": summary(
                [by_pass[p["name"]] for p in passes if (p["file"], p["written"]) == (file, kind)]
            )
            for file, kind in sorted({(p["file"], p["written"]) for p in passes})
        },
        "host": host(),
    }
    print(json.dumps(report["by_kind"], indent=2))
    write_report(args.out, report)


if __name__ == "__main__":
    main()
