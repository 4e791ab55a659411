"""Which Recall requests the compiled front can answer itself: one rule for the server (it
publishes plans only for these shapes, api/fast_front.py) and the clients (they send only these
to the front and every other Recall to the main port, faces/recall_routing.py), so no call pays
the front's hand-over to Python that it would not pay without the front.

Kept apart from api/fast_front.py so the clients import it without the server's modules."""

from __future__ import annotations

from polarmem.v1 import memory_service_pb2 as pb


# Trailing metadata of Recall answers on the main port when the server runs a front: the front's
# port. The clients join it to the host they already reach the main port on.
FRONT_PORT_HEADER = "x-polarmem-fast-front-port"


def plannable(request) -> bool:
    """No full items, no suppressed hits, no recency term, no consistency token (a Milvus
    server's; each write's token would make a new shape): the fields that let the front replay a
    shape (api/fast_front.py's docstring says why each one). Then either

    * query vectors (one row per space), no text and no context; or
    * a text query (ASCII: the compiled tokenizer declines other text) with no vectors and a
      mode other than adaptive (whose choice depends on the text), the context or not, explicit
      required / forbidden names or not: the front parses, embeds and binds each text (an
      explicit name binds natively when it is a concept's own name, as written there).

    Every mode but adaptive always makes one core search (strict included: the core merges its
    two); a vector query's adaptive does when it settles without a probe search, which only the
    answer tells."""
    if (
        request.include_items
        or request.suppressed_k != 0
        or request.HasField("recency_half_life_s")
        or request.HasField("recency_weight")
        or request.consistency_token
    ):
        return False
    if request.mode == pb.RECALL_MODE_ANSWER:  # several searches and the core's labels (answer_recall.py)
        return False
    if request.text:
        return request.text.isascii() and len(request.vectors) == 0 and request.mode != pb.RECALL_MODE_ADAPTIVE
    return (
        not request.include_context
        and len(request.vectors) > 0
        and all(value.rows <= 1 for value in request.vectors.values())
    )
