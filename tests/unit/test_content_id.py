"""The id of an item sent without one (cpp/include/polarmem/content_id.hpp, domain/items.content_id)
against hashlib running the rule the library hashed by before it moved into the core: 2,000 random
items (texts and contents across SHA-256's 55/56/64-byte block edges, lone surrogates, no text at
all: vectors and evidence) give the same id, and ids already handed out stay what they were."""

from __future__ import annotations

import hashlib
import random

import numpy as np

from polarmem_server.domain.items import ItemInput, content_id


def previous_content_id(item: ItemInput) -> str:
    """Round 38's domain/items.content_id, verbatim."""
    digest = hashlib.sha256()
    for part in (str(item.kind), item.text, item.uri):
        data = part.encode("utf-8", "surrogatepass") if isinstance(part, str) else repr(part).encode()
        digest.update(len(data).to_bytes(8, "little") + data)
    content = bytes(item.content or b"")
    digest.update(len(content).to_bytes(8, "little") + content)
    if not (item.text or item.uri or content):
        for space in sorted(item.vectors):
            digest.update(space.encode() + np.ascontiguousarray(item.vectors[space], dtype=np.float32).tobytes())
        digest.update(repr(sorted((k, list(map(float, v))) for k, v in item.scores.items())).encode())
        digest.update(repr(sorted(item.states.items())).encode())
    return "h" + digest.hexdigest()[:31]


def random_item(rng: random.Random) -> ItemInput:
    alphabet = "ab é\ud800🙂"
    return ItemInput(
        kind=rng.choice(("visual", "text")),
        text="".join(rng.choice(alphabet) for _ in range(rng.choice((0, 1, 20, 39, 40, 41, 47, 48, 100, 300)))),
        uri=rng.choice(("", "s3://b/k.jpg")),
        content=bytes(rng.randrange(256) for _ in range(rng.choice((0, 0, 55, 56, 64, 130)))),
        vectors={"vis": np.array([rng.random() for _ in range(4)], np.float32)} if rng.random() < 0.5 else {},
        scores={"dog": [rng.random()]} if rng.random() < 0.3 else {},
        states={"cat": "has"} if rng.random() < 0.3 else {},
    )


def test_the_cores_ids_are_the_ones_the_library_gave_before():
    rng = random.Random(39)
    for _ in range(2000):
        item = random_item(rng)
        assert content_id(item) == previous_content_id(item), item
    assert content_id(ItemInput(kind="text", text="a dog")) == previous_content_id(ItemInput(kind="text", text="a dog"))
    assert content_id(ItemInput()) != content_id(ItemInput(vectors={"vis": np.ones(2, np.float32)}))
