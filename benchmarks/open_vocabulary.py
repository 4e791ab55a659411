"""What an open vocabulary costs (issue 31): ingest rate, memory per item, and how long a concept
or alias declared later takes to reach every stored text item, at 100,000 text notes.

The notes are the bundled COCO dev captions (polarmem_server/data, CC BY 4.0: see its README),
each stored as written and again with one of the image's absent objects negated
("..., no bicycle"), until `--items` notes. Two namespaces, same notes, same run, through the
library over a real on-disk RocksDB store: `open` (NamespaceSettings.open_vocabulary) and
`closed` (no declared vocabulary: what the product did before). No encoder, no vectors: the
text pathway alone is measured (the MiniLM encoder's cost is issue 33's).

    python benchmarks/open_vocabulary.py --items 100000 --out benchmarks/results/open_vocabulary.json
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import platform
import resource
import tempfile
import time
from importlib import resources
from pathlib import Path

from polarmem_server.domain.items import ItemInput
from polarmem_server.library.memory import Memory, NamespaceSettings

BATCH = 256
DECLARED_LATER = ["fire hydrant", "teddy bear", "tennis racket", "traffic light"]  # COCO names of two words
ALIASES = {"puppy": "dog", "kitten": "cat"}


def notes(count: int) -> list[str]:
    path = resources.files("polarmem_server.data") / "coco_val2014_dev10k.jsonl.gz"
    out: list[str] = []
    with gzip.open(str(path), "rt") as handle:
        rows = [json.loads(line) for line in handle]
    while len(out) < count:
        for row in rows:
            for i, caption in enumerate(row["captions"]):
                absent = row["not_has"][(len(out) + i) % len(row["not_has"])]
                out.append(caption.strip())
                out.append(f"{caption.strip().rstrip('.')}, no {absent}.")
                if len(out) >= count:
                    return out[:count]
    return out


def rss_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def ingest(memory: Memory, ns: str, texts: list[str]) -> float:
    started = time.perf_counter()
    for start in range(0, len(texts), BATCH):
        batch = [ItemInput(id=f"n{start + i}", kind="text", text=t) for i, t in enumerate(texts[start : start + BATCH])]
        for result in memory.remember_batch(ns, batch):
            if isinstance(result, Exception):
                raise result
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--items", type=int, default=100_000)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    texts = notes(args.items)
    report: dict = {
        "items": len(texts),
        "host": platform.processor() or platform.machine(),
        "avx512": "avx512f" in Path("/proc/cpuinfo").read_text(),
        "load_before": os.getloadavg(),
    }
    with tempfile.TemporaryDirectory() as data:
        memory = Memory(data)
        for ns, open_vocabulary in (("closed", False), ("open", True)):
            memory.create_namespace(
                NamespaceSettings(name=ns, encoder="none", spaces=(), open_vocabulary=open_vocabulary)
            )
            rss_before = rss_mib()
            seconds = ingest(memory, ns, texts)
            index = memory.backend.index_of(ns).index
            report[ns] = {
                "ingest_s": round(seconds, 1),
                "items_per_s": round(len(texts) / seconds),
                "concepts": len(memory.namespace(ns).vocabulary),
                "index_bytes_per_item": round(index.memory_bytes / len(texts)),
                "peak_rss_growth_mib": round(rss_mib() - rss_before),
            }
            print(ns, report[ns], flush=True)
        applied = []
        for name in DECLARED_LATER:
            started = time.perf_counter()
            _, _, changed = memory.update_namespace("open", {"concepts": [name]})
            applied.append(
                {"concept": name, "items_changed": changed, "seconds": round(time.perf_counter() - started, 3)}
            )
        for alias, target in ALIASES.items():
            started = time.perf_counter()
            _, _, changed = memory.update_namespace("open", {"aliases": {alias: target}})
            applied.append(
                {
                    "alias": f"{alias} -> {target}",
                    "items_changed": changed,
                    "seconds": round(time.perf_counter() - started, 3),
                }
            )
        started = time.perf_counter()
        result = memory.recall("open", required=["red car"], k=10)
        applied.append(
            {
                "query_named": "red car",
                "top_tier": result.hits[0].tier if result.hits else None,
                "seconds": round(time.perf_counter() - started, 3),
            }
        )
        report["applied_later"] = applied
        for row in applied:
            print(row, flush=True)
        memory.close()
    report["load_after"] = os.getloadavg()
    if args.out:
        args.out.write_text(json.dumps(report, indent=2) + "\n")


if __name__ == "__main__":
    main()
