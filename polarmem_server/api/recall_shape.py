"""Which Recall requests the compiled front can answer itself: one rule for the server (it
publishes plans only for these shapes, api/fast_front.py) and the clients (they send only these
to the front and every other Recall to the main port, faces/recall_routing.py), so no call pays
the front's hand-over to Python that it would not pay without the front.

Kept apart from api/fast_front.py so the clients import it without the server's modules."""

from __future__ import annotations


# Trailing metadata of Recall answers on the main port when the server runs a front: the front's
# port. The clients join it to the host they already reach the main port on.
FRONT_PORT_HEADER = "x-polarmem-fast-front-port"


def plannable(request) -> bool:
    """No context, no full items, no suppressed hits, no
    recency term, no consistency token (a Milvus server's; each write's token would make a new
    shape), query vectors (one row per space) and no text: the fields that let the front replay a
    shape (api/fast_front.py's docstring says why each one). Every mode but adaptive always makes
    one core search (strict included: the core merges its two); adaptive does when it settles
    without a probe search, which only the answer tells."""
    return (not request.include_context
            and not request.include_items and request.suppressed_k == 0
            and not request.HasField("recency_half_life_s") and not request.HasField("recency_weight")
            and not request.text and not request.consistency_token and len(request.vectors) > 0
            and all(value.rows <= 1 for value in request.vectors.values()))
