"""Where the approximate index starts to pay for answer mode (the MCP `recall` tool's default):
in process, the bundled COCO dev captions as notes at several sizes, each in a namespace with an
HNSW index (`namespace create --ann`), answer-mode recalls of dev captions not among the notes,
exact and approximate, the question's encoding cached (both read it from the same cache).
Reports CPU ms per recall both ways and how many top 5 are identical (ids and order). Dev data
only: this is what chose docs/agents.md's "past ~N notes" advice.

    .venv/bin/python benchmarks/answer_ann_sizes.py            # 10k, 25k, 50k, 100k notes

Writes benchmarks/results/answer-ann-sizes-dev.json (with the host's CPU flags and load)."""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from bench_mix import captions, encoded  # noqa: E402
from harness import machine  # noqa: E402

from polarmem_server.index import AnnSpec  # noqa: E402
from polarmem_server.library import ItemInput, Memory, NamespaceSettings  # noqa: E402

UNIQUE = 20_000  # distinct dev captions used as notes (repeated past that)
QUESTIONS_SKIP = 40_000  # the questions: dev captions after these, never notes


def measure(size: int, texts, vectors, questions) -> dict:
    memory = Memory(tempfile.mkdtemp(prefix="polarmem-ann-sizes-"), threads=1)
    try:
        memory.create_namespace(NamespaceSettings(name="n", ann=AnnSpec()))
        for start in range(0, size, 1000):
            memory.remember_batch(
                "n",
                [
                    ItemInput(id=f"i{i}", kind="text", text=texts[i % UNIQUE], vectors={"sem": vectors[i % UNIQUE]})
                    for i in range(start, min(size, start + 1000))
                ],
            )
        for question in questions:  # encodings cached, caches warm
            memory.recall("n", question, mode="answer", k=5)
        cpu = {}
        for approximate in (False, True, False, True):
            started = time.process_time()
            for question in questions:
                memory.recall("n", question, mode="answer", k=5, approximate=approximate)
            cpu.setdefault(approximate, []).append((time.process_time() - started) * 1000 / len(questions))
        same = sum(
            [h.item_id for h in memory.recall("n", q, mode="answer", k=5).hits]
            == [h.item_id for h in memory.recall("n", q, mode="answer", k=5, approximate=True).hits]
            for q in questions
        )
        return {
            "notes": size,
            "exact_cpu_ms": round(min(cpu[False]), 3),
            "approximate_cpu_ms": round(min(cpu[True]), 3),
            "identical_top5": same,
            "questions": len(questions),
        }
    finally:
        memory.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="10000,25000,50000,100000")
    parser.add_argument("--questions", type=int, default=300)
    parser.add_argument("--work-dir", type=Path, default=Path(tempfile.gettempdir()) / "polarmem-mix-encodings")
    parser.add_argument("--out", type=Path, default=HERE / "results" / "answer-ann-sizes-dev.json")
    args = parser.parse_args()
    args.work_dir.mkdir(parents=True, exist_ok=True)
    texts = captions(UNIQUE)
    vectors = encoded(args.work_dir, texts)
    questions = captions(args.questions, skip=QUESTIONS_SKIP)
    report = {"benchmark": "answer_ann_sizes", "machine": machine(), "load_before": os.getloadavg(), "rows": []}
    for size in (int(s) for s in args.sizes.split(",")):
        row = measure(size, texts, vectors, questions)
        print(row, flush=True)
        report["rows"].append(row)
    report["load_after"] = os.getloadavg()
    args.out.write_text(json.dumps(report, indent=1) + "\n")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
