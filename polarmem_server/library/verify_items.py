"""Items scored through the verifier port (library layer; Memory delegates here): a batch of new
items or new content submitted together, so the engine's batcher scores them at once, and the raw
scores of ScoreConcepts."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import Future

from polarmem_server.domain.items import Evidence, ItemInput, check_evidence
from polarmem_server.domain.namespace import Namespace
from polarmem_server.errors import Unimplemented
from polarmem_server.scoring.verification import Verifier

Submitted = Callable[[Future], None]


def verify_batch(
    verifier: Verifier | None,
    namespace: Namespace,
    items: list[tuple[int, ItemInput]],
    deadline: float | None,
    on_submit: Submitted | None,
) -> dict[int, Evidence | Exception]:
    """Scores items through the verifier port: index -> the verified Evidence, or the
    exception that fails the item. All are submitted before any is awaited, so the batcher
    scores them together."""
    if not items:
        return {}
    try:
        verifier = require_verifier(verifier)
    except Unimplemented as exc:
        return {i: exc for i, _ in items}
    started: dict[int, tuple[Future, list[str]]] = {}
    out: dict[int, Evidence | Exception] = {}
    for i, item in items:
        try:
            concepts = verifier.candidate_concepts(
                item.text, item.content, list(item.verify_concepts), namespace.vocabulary.names
            )
            future = verifier.submit(item.text, item.content, concepts, namespace.settings.templates)
            if on_submit is not None:
                on_submit(future)
            started[i] = (future, concepts)
        except Exception as exc:  # noqa: BLE001 - fails this item alone
            out[i] = exc
    for i, (future, concepts) in started.items():
        try:
            scores = verifier.result(future, concepts, deadline)
            out[i] = check_evidence(scores, None, verifier.engine_name, verifier.model)
        except Exception as exc:  # noqa: BLE001
            out[i] = exc
    return out


def require_verifier(verifier: Verifier | None) -> Verifier:
    """The verifier, or Unimplemented saying how to configure one."""
    if verifier is None:
        raise Unimplemented(
            "server-side verification (verify_concepts, content, ScoreConcepts) needs a scoring "
            "engine: start the server with --engine; or send scores or states"
        )
    return verifier


def score_concepts(
    verifier: Verifier | None,
    namespace: Namespace,
    text: str,
    content: bytes,
    concepts: Sequence[str],
    deadline: float | None = None,
    on_submit: Submitted | None = None,
) -> dict[str, list[float]]:
    """Raw verifier scores (concept -> P(Yes) per template); nothing is stored."""
    verifier = require_verifier(verifier)
    chosen = verifier.candidate_concepts(text, content, list(concepts), namespace.vocabulary.names)
    future = verifier.submit(text, content, chosen, namespace.settings.templates)
    if on_submit is not None:
        on_submit(future)
    return verifier.result(future, chosen, deadline)
