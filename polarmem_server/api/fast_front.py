"""The compiled front (cpp/front, module ``polarmem_server._front``) as the server runs it.

``polarmem serve`` puts it on the address clients use (setting ``front``, default auto; the
Python listener takes the address where the front was not built, with ``--processes`` > 1 or
the Milvus backend). Written in C++, it plans and answers Recalls from the core without the
interpreter, and hands every other call — a Recall it cannot answer, any other method, unary or
streaming (cpp/front/call_proxy.cpp) — to the Python listener over a private Unix socket with the
caller's metadata, deadline and address (``x-polarmem-peer``); the answer comes back exactly as
the library gave it.

What it plans from is the namespace's *view* (cpp/front/namespace_view.hpp), which the library
hands over after the first Recall of the namespace it answered for the front: the namespace's
compiled index, item ids, metadata postings and records (the backend's ``front_view``: the
local backend's core objects), its concept names and lookup keys, its text path (query cues,
compiled encoder and tokenizer, and a closed vocabulary's concept vectors), whether it has an
approximate index, its rule (mode and words) and mode rules (mode_rules below), and the library's bounds on
a request's fields. From it the front plans every request as the library would
(``plan_recall``): the mode (the rule's when none is named), the confidence ranking in force,
the recency term, explicit names bound by the lookup keys, the text parsed, bound and embedded,
the core search with its filters; the core's Recall run (recall_run.hpp) or, in mode answer, its
agent recall (answer_recall.hpp) answers it, explained from the records the core holds. A
request the library would refuse, or one only the library answers (full items, a consistency
token, a name the vocabulary lacks, a multi-vector space, a text the compiled tokenizer
declines, a hit whose record the core does not hold yet), goes to the library.

A write that changes what the view holds (settings, rule, an alias) or deletes the namespace
drops it (domain/namespace.py ChangeLock); the next Recall the library answers hands over a new
one, and a view is handed over only if no such write ran meanwhile. Item writes keep it: hits
come from the live index. A write that only appends concepts keeps it too: the new concepts
join its names and keys (a closed vocabulary's word that would map to one is handed to the
library until a new view carries their vectors). Tokens: the front checks bearer tokens like
api/auth.py (SHA-256, constant time); a call it cannot admit goes to the library, which refuses
it in its own words. docs/fast-front.md has the measurements and the limits.
"""

from __future__ import annotations

import logging
from pathlib import Path

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily

from polarmem.v1 import memory_service_pb2 as pb

from polarmem_server import _core
from polarmem_server.domain import items, query
from polarmem_server.domain.confidence import NO_CONFIDENCE, ConfidenceRanking, absent_level, present_level
from polarmem_server.domain.negation import CLINICAL as QUERY_CUES  # the cues recall.py parses queries with
from polarmem_server.domain.query import RECENCY_MODES, UNTIERED_MODES, RecallMode
from polarmem_server.domain.rule_choice import RuleChoice, confidence_in_force, describe_confidence
from polarmem_server.domain.vocabulary import Appended
from polarmem_server.index import MAX_TOP_K
from polarmem_server.library import concept_vectors
from polarmem_server.scoring.encoder import load_encoder

log = logging.getLogger("polarmem.fast_front")
FRONT_HEADER = "x-polarmem-fast-front"
PEER_HEADER = "x-polarmem-peer"


# Every RecallMode code a request may carry (0: none named, the rule's), and rank_by_confidence
# as the front codes it: 0 unset, 1 false, 2 true.
MODE_NAMES = {pb.RECALL_MODE_UNSPECIFIED: None, **{getattr(pb, f"RECALL_MODE_{m.name}"): m for m in RecallMode}}
RANK_BY_CONFIDENCE = {0: None, 1: False, 2: True}


def mode_rules(rule: RuleChoice) -> list[tuple[int, int, bool, tuple, bool]]:
    """The library's own rules for each mode and rank_by_confidence in a namespace of `rule`
    (confidence_in_force, recall_query's check of the ranking against the mode, check_recency's
    modes and ranking), for the front to look up instead of deciding them again: (mode code,
    rank_by_confidence code, accepted, ranking in force, recency allowed)."""
    out = []
    for code, named in MODE_NAMES.items():
        mode = named or RecallMode(rule.recall_mode)
        for coded, requested in RANK_BY_CONFIDENCE.items():
            try:
                ranking = confidence_in_force(rule.rule, named is None, requested, named.value if named else None)
            except ValueError:
                out.append((code, coded, False, ranking_words(NO_CONFIDENCE), False))
                continue
            accepted = not (ranking.used and mode in UNTIERED_MODES)
            recency = mode in RECENCY_MODES and not ranking.used
            out.append((code, coded, accepted, ranking_words(ranking), recency))
    return out


def ranking_words(ranking: ConfidenceRanking) -> tuple[bool, int, int, float, float, str]:
    """A confidence ranking as the front's searches apply it and mode_reason says it."""
    return (
        ranking.used,
        present_level(ranking.present_above),
        absent_level(ranking.absent_below),
        ranking.present_weight,
        ranking.absent_weight,
        describe_confidence(ranking),
    )


def unavailable_reason() -> str | None:
    """Why the compiled front cannot run here (None: it can)."""
    try:
        import polarmem_server._front  # noqa: F401 - (this form: see FastFrontHost)
    except ImportError as exc:
        return (
            f"the compiled Recall front was not built ({exc}); install Debian's libgrpc++-dev and "
            "protobuf-compiler-grpc and reinstall the package (`make install` does both)"
        )
    return None


def caller_peer(context) -> str:
    """The caller's address: the front's word for it (cpp/front/call_proxy.hpp kPeerHeader) when
    the call came over the private socket, where the front strips any the caller sent."""
    peer = context.peer()
    if peer.startswith("unix:"):
        for key, value in context.invocation_metadata() or ():
            if key == PEER_HEADER:
                return value
    return peer


def came_through_front(context) -> bool:
    return any(key == FRONT_HEADER for key, _ in (context.invocation_metadata() or ()))


class FastFrontHost:
    """Starts the front, hands it namespace views and tokens, exports its counters, stops it."""

    def __init__(
        self,
        address: str,
        upstream: str,
        authorizer,
        tls_cert: str = "",
        tls_key: str = "",
        max_in_flight: int = 0,
        max_receive_bytes: int = 4 << 20,
    ) -> None:
        """Listens on ``address`` at once, handing every call to ``upstream`` until attach()
        gives it the memory to plan from (the server starts it before the store is open, so
        health answers NOT_SERVING there meanwhile)."""
        # not `from polarmem_server import _front`: with no stub of it, mypy calls that a missing attribute
        import polarmem_server._front as _front

        cert = Path(tls_cert).read_text() if tls_cert else ""
        key = Path(tls_key).read_text() if tls_key else ""
        self.views = _front.NamespaceViews(
            max_top_k=MAX_TOP_K,
            max_ef_search=query.MAX_EF_SEARCH,
            max_soft_lambda=query.MAX_SOFT_LAMBDA,
            max_query_concepts=query.MAX_QUERY_CONCEPTS,
            max_metadata_keys=items.MAX_METADATA_KEYS,
            max_metadata_key_bytes=items.MAX_METADATA_KEY_BYTES,
            max_metadata_value_bytes=items.MAX_METADATA_VALUE_BYTES,
            max_metadata_total_bytes=items.MAX_METADATA_TOTAL_BYTES,
            default_top_k=query.DEFAULT_TOP_K,
            default_recency_weight=query.DEFAULT_RECENCY_WEIGHT,
        )
        self.front = _front.FastFront(address, upstream, self.views, cert, key, max_in_flight, max_receive_bytes)
        self._authorizer = authorizer
        self._memory = None
        self.refresh_grants()

    def attach(self, memory) -> None:
        """Views from now on follow the memory's writes (ChangeLock calls _namespace_changed)."""
        self._memory = memory
        memory.change_listeners.append(self._namespace_changed)
        # Explained answers read the items' records from the core: held only where a front runs.
        keep_records = getattr(memory.backend, "keep_records", None)
        if keep_records is not None:
            keep_records()

    @property
    def port(self) -> int:
        return self.front.port

    def refresh_grants(self) -> None:
        """Hands the front the tokens in force (at start and after each reload)."""
        self.front.set_grants(
            [(grant.digest, sorted(grant.namespaces)) for grant in self._authorizer.grants if grant.allows_role("read")]
        )

    def _namespace_changed(self, namespace: str, appended: Appended | None) -> None:
        """A write changed what the namespace's view holds (ChangeLock, which calls this before
        letting its lock go): ``appended`` holds the concepts it only appended; None drops the
        view. A view's keys are brought up to date first, so a text or a name naming a new
        concept binds it as soon as its write returns."""
        if appended is None:
            self.views.forget(namespace)
            return
        if self.views.holds(namespace):
            appended.compiled_keys()
            self.views.append_names(namespace, appended.first, appended.names)

    def offer_view(self, namespace, epoch: int) -> bool:
        """After a Recall the library answered for the front: hands the front the namespace's
        view unless it holds a current one, and only if ``namespace`` is still the live namespace
        of its name and no write dropped views since ``epoch`` (its ``view_epoch``, read before the
        Recall) was read; it never waits for a writer. Returns whether it handed one over."""
        memory = self._memory
        vocabulary = namespace.vocabulary
        if memory is None or not memory.backend.ranks_by_confidence:
            return False
        if self.views.current(namespace.name, len(vocabulary)):
            return False
        settings = namespace.settings
        encoder = load_encoder(settings.encoder)
        compiled = getattr(encoder, "compiled", None)
        sem = namespace.spaces.get("sem")
        # text queries embed into the `sem` space (recall.py); any other layout leaves them to the library
        native_text = compiled is not None and sem is not None and not sem.multi and sem.dim == encoder.dim
        if native_text and not settings.open_vocabulary:
            concept_vectors(namespace)  # encoded here, not under the write lock below (then cached)

        def publish() -> None:
            if memory.live_namespace(namespace.name) is not namespace:
                return  # deleted (and perhaps created again) since the Recall
            core = memory.backend.front_view(namespace.name)
            if core is None:
                return
            rule = namespace.rule
            text = None
            if native_text:
                # a closed vocabulary's words that name no concept map to the closest concept's name
                mapping = None if settings.open_vocabulary else concept_vectors(namespace)
                text = (QUERY_CUES.compiled, *compiled, settings.open_vocabulary, mapping)
            self.views.set(
                namespace.name,
                *core,
                names=vocabulary.names,
                keys=vocabulary.compiled_keys(),
                approximate=settings.ann is not None,
                rule_mode=_core.SearchMode.__members__[rule.recall_mode],
                rule_words=rule.words,
                mode_rules=mode_rules(rule),
                text=text,
            )

        try:
            return namespace.write_lock.unchanged_since(epoch, publish) and self.views.holds(namespace.name)
        except ValueError as refused:  # never fails the call the library has answered
            log.warning("no view of %s handed to the front: %s", namespace.name, refused)
            return False

    def shutdown(self, grace_seconds: float) -> None:
        self.front.shutdown(grace_seconds)


class FastFrontCollector:
    """The front's own counters, read at scrape time (the Python metrics do not see its calls)."""

    def __init__(self, host: FastFrontHost) -> None:
        self._host = host

    def collect(self):
        stats = self._host.front.stats()
        calls = CounterMetricFamily(
            "polarmem_fast_front_recalls", "Recalls through the compiled front, by path", labels=["path"]
        )
        calls.add_metric(["native"], stats["native"])
        calls.add_metric(["forwarded"], stats["forwarded"])
        calls.add_metric(["overloaded"], stats["overloaded"])
        yield calls
        hits = CounterMetricFamily(
            "polarmem_fast_front_hits", "Hits the front returned itself, by tier", labels=["tier"]
        )
        for tier, count in stats["hits"].items():
            hits.add_metric([tier], count)
        yield hits
        yield GaugeMetricFamily(
            "polarmem_fast_front_in_flight", "Recalls in the compiled front now", value=stats["in_flight"]
        )
        yield GaugeMetricFamily(
            "polarmem_fast_front_namespaces",
            "Namespaces whose Recalls the compiled front plans itself",
            value=self._host.views.size,
        )
        buckets, total = [], 0
        for bound, count in zip([*map(str, stats["latency_bounds"]), "+Inf"], stats["latency_counts"]):
            total += count
            buckets.append((bound, total))
        latency = HistogramMetricFamily(
            "polarmem_fast_front_latency_seconds", "Time the front took for the Recalls it answered itself"
        )
        latency.add_metric([], buckets, sum_value=stats["latency_sum"])
        yield latency
