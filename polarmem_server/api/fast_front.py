"""The compiled front (cpp/front, module ``polarmem_server._front``) as the server runs it.

``polarmem serve`` puts it on the address clients use (setting ``front``, default auto; the
Python listener takes the address where the front was not built, with ``--processes`` > 1 or
the Milvus backend). Written in C++, it answers the Recalls it holds a plan for from the core,
without the interpreter, and hands every other call — any other Recall, any other method, unary
or streaming (cpp/front/call_proxy.cpp) — to the Python listener over a private Unix socket with
the caller's metadata, deadline and address (``x-polarmem-peer``); the answer comes back exactly
as the library gave it. After answering a Recall the front handed over, the library publishes a
*plan* for the request's shape (every field but the vector values) when the shape is one the
front can replay exactly:

* no full items;
* a context (include_context): rendered per call by the core (fact_check_context.cpp), its
  hits' stated concepts named from the names table the listeners keep current;
* mode adaptive, the recency term (hard or off) and suppressed hits (a mode other than off): the
  core's Recall run (recall_run.hpp), which the library runs with its backend's searches, runs
  them with the plan's search on the index, setting each search's mode, k, conflicts and ranking,
  and writes mode_reason per call; the recency term's stamps come from the hits' held records;
* explanations (the default) are made from the hits' stored records, which the core holds by
  slot (storage/local/namespace_index.py: set as items are written, filled as the library reads
  them): a hit whose record the core does not hold yet sends the call to the library;
* a metadata filter is part of the shape by its keys only: the front makes each call's
  allow-list from its values with the namespace's postings (the core's MetadataPostings, which
  the library filters with too); a call no item passes is answered too (the run says so in
  mode_reason);
* query vectors (one row per space), or a text the front parses and embeds itself;
* any mode of the logic (hard, soft, off, strict: the core merges strict's two searches under
  one lock; adaptive, with or without a confidence ranking, chosen per call);
* or mode answer with text (the MCP recall tool's): the core's agent recall
  (cpp/include/polarmem/answer_recall.hpp), which the library calls too, makes its searches on
  the namespace's index from the plan's plain-similarity search (its space, filters, exactness).

A shape whose concepts each bound to one (none skipped as unknown) is also published as a
*generic* shape: the same request with any concepts of the namespace's vocabulary, as many
required and forbidden, bound by the namespace's lookup keys (its compiled keys, which the parse
reads too: any case or number of a concept's name, or an alias; repeats count once; an ASCII
name only). The next Recall of either is answered by the front from the core: the same core
request with the new vectors (and concept ids), run by the core's Recall run on the index (hits'
ids from the core's ItemIds, concept states from the index, mode_used and mode_reason per call),
and the library's parse. A write that changes what plans depend on (settings, rule, an
alias) or deletes the namespace drops its plans, names and keys (domain/namespace.py
ChangeLock), so a plan never outlives what it was made from, and a plan is published only if no
such write ran while the library answered. Item writes that name known concepts keep the plans:
the hits come from the live index either way. A write that only appends concepts (an open
vocabulary's new words) keeps them too, since every name resolves as before: the new concepts
join the front's names and keys, and only the plans whose answer lists names skipped as
unknown (which may be concepts now, with suggestions drawn from the whole vocabulary) go.
Tokens: the front checks bearer tokens like api/auth.py (SHA-256, constant time); a call it
cannot admit goes to the library, which refuses it in its own words. docs/fast-front.md has the measurements and the limits.
"""

from __future__ import annotations

import logging
from pathlib import Path

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily

from polarmem.v1 import memory_service_pb2 as pb

from polarmem_server import _core
from polarmem_server.domain.namespace import Epoch
from polarmem_server.domain.query import DEFAULT_RECENCY_WEIGHT, DEFAULT_TOP_K
from polarmem_server.domain.negation import CLINICAL as QUERY_CUES  # the cues recall.py parses queries with
from polarmem_server.domain.vocabulary import Appended
from polarmem_server.library import RecallMode, concept_vectors
from polarmem_server.scoring.encoder import load_encoder
from polarmem_server.storage.plan_capture import CoreSearch

log = logging.getLogger("polarmem.fast_front")
FRONT_HEADER = "x-polarmem-fast-front"
PEER_HEADER = "x-polarmem-peer"
# The modes the core's Recall run answers (adaptive's mode_used is the hard or soft it chose).
RUN_MODES = {RecallMode.HARD.value, RecallMode.SOFT.value, RecallMode.OFF.value, RecallMode.STRICT.value}


def plannable(request) -> bool:
    """Which Recall requests the front can answer itself, so the library publishes plans for these
    shapes only. No full items, no consistency token (a Milvus server's; each write's token
    would make a new shape): the fields that let the front replay a shape (the module docstring
    says why each one). Then either

    * query vectors (one row per space) and no text, a context or not; or
    * a text query with no vectors (the front hands over a text its compiled tokenizer declines), the
      context or not, explicit required / forbidden names or not: the front parses, embeds and
      binds each text (explicit names bind as a generic shape's do).

    Whether the answer can be replayed (its searches, its confidence ranking) only the library's
    answer tells: publish() decides. Mode answer (several searches, one core entry) is planned
    for text with no vectors."""
    if request.include_items or request.consistency_token:
        return False
    if request.mode == pb.RECALL_MODE_ANSWER:  # the core's agent recall
        return bool(request.text) and not request.vectors
    if request.text:
        return len(request.vectors) == 0
    return len(request.vectors) > 0 and all(value.rows <= 1 for value in request.vectors.values())


def recency_term(request) -> tuple[int, tuple[float, float]]:
    """A recency Recall's (k, (half-life s, weight)) as the library read them; (0, (0, 0)) for
    any other Recall."""
    if not request.HasField("recency_half_life_s"):
        return 0, (0.0, 0.0)
    weight = request.recency_weight if request.HasField("recency_weight") else DEFAULT_RECENCY_WEIGHT
    return requested_k(request), (request.recency_half_life_s, weight)


def requested_k(request) -> int:
    return request.top_k if request.HasField("top_k") else DEFAULT_TOP_K


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
    """Starts the front, feeds it plans and tokens, exports its counters, stops it."""

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
        self.plans = _front.PlanCache()
        self.front = _front.FastFront(address, upstream, self.plans, cert, key, max_in_flight, max_receive_bytes)
        self._authorizer = authorizer
        self.refresh_grants()

    def attach(self, memory) -> None:
        """Plans from now on follow the memory's writes (ChangeLock calls _namespace_changed)."""
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
        """A write changed what the namespace's plans depend on (ChangeLock, which calls this
        before letting its lock go): ``appended`` holds the concepts it only appended; None drops
        every plan, the names and the keys. A namespace the front holds names for (its text plans
        parse, its generic plans bind by the compiled keys) gets the keys brought up to date
        first, so a text or a name naming a new concept binds it as soon as its write returns."""
        if appended is None:
            self.plans.forget(namespace)
            return
        if self.plans.has_names(namespace):
            appended.compiled_keys()
            self.plans.append_names(namespace, appended.first, appended.names)
        self.plans.concepts_appended(namespace)

    def publish(self, request, response, result, namespace, searches: list[CoreSearch], epoch: Epoch) -> bool:
        """Publishes the plan of a Recall the library just answered, when its shape can be replayed
        and no write that changed what plans depend on ran since ``epoch`` (the namespace's
        plan epoch) was read. Returns whether it did. A plan the front refuses is not published,
        and never fails the call the library has answered."""
        try:
            return self._publish(request, response, result, namespace, searches, epoch)
        except ValueError as refused:
            log.warning("no plan published for a Recall of %s: %s", namespace.name, refused)
            return False

    def _publish(self, request, response, result, namespace, searches: list[CoreSearch], epoch: Epoch) -> bool:
        if not plannable(request) or not searches:
            return False
        if result.mode_used == RecallMode.ANSWER.value:
            # its first search is plain similarity to the whole question (none: the filter let nothing pass)
            first = searches[0]
            if first.request.mode.name != "off":
                return False
            return self._publish_text(request, response, result, namespace, first, epoch, answer=True)
        # Every search the library made for the Recall (adaptive's probes, recency's candidates,
        # the suppressed hits' plain-similarity search) shares its vectors, concepts, filters and
        # exactness, and the core's run sets each one's mode, k, conflicts and ranking: the first
        # serves as the plan's, given the Recall's own mode, k and conflicts.
        adaptive = request.mode == pb.RECALL_MODE_ADAPTIVE
        recency_k, term = recency_term(request)
        if result.mode_used not in RUN_MODES:
            return False
        search = searches[0]
        if (list(search.required), list(search.forbidden)) != (result.plan.required, result.plan.forbidden):
            return False  # (a Recall run again after a catch-up bound its concepts anew: not this plan's)
        mode = RecallMode.HARD.value if adaptive else result.mode_used  # (adaptive: chosen per call)
        recall_search = (_core.SearchMode.__members__[mode], requested_k(request), request.exclude_conflicts)
        if recency_k and search.records is None:
            return False  # the stamps come from the records the core holds
        if request.text:
            return self._publish_text(
                request,
                response,
                result,
                namespace,
                search,
                epoch,
                adaptive=adaptive,
                recency=(recency_k, term),
                recall_search=recall_search,
            )
        if not search.plain:
            return False
        # A context's hits are explained whatever `explain` says (the library reads their records).
        explain = (request.explain if request.HasField("explain") else True) or request.include_context
        if explain and search.records is None:
            return False  # this backend holds no records for the front
        # The concepts whose states the hits report (explain off) or whose evidence they cite.
        cited = search.states or explain
        concepts = [*search.required, *search.forbidden] if cited else []
        names = [*result.required, *result.forbidden] if cited else []
        if len(names) != len(concepts):
            return False

        # Generic too when it names concepts and each bound to one: then any names of the vocabulary
        # bind to the same plan, as many of each, by the namespace's lookup keys.
        generic = bool(request.required or request.forbidden) and not result.plan.unknown_concepts

        # Names skipped as unknown (allow_unknown_concepts) are listed with suggestions drawn from
        # the whole vocabulary, and may name a concept after the next append: such a plan goes
        # with every append (never generic: the names sent differ from those resolved).
        reads_vocabulary = bool(result.plan.unknown_concepts or result.plan.unknown or result.plan.mapped)

        def publish() -> None:
            arguments = (
                namespace.name,
                request.SerializeToString(),
                search.index,
                search.ids,
                search.metadata,
                search.records,
                explain,
                search.request,
                concepts,
                len(search.required) if cited else 0,
                names,
                response.SerializeToString(),
            )
            modes = dict(
                recency_k=recency_k,
                recency=term,
                adaptive=adaptive,
                rule_words=result.rule_words,
                confidence_words=result.confidence_words,
                confidence=result.confidence_levels,
                recall_search=recall_search,
                context=request.include_context,
            )
            if request.include_context:
                self._names_of(namespace)  # the context names each hit's stated concepts
            self.plans.publish(*arguments, reads_vocabulary=reads_vocabulary, **modes)
            if generic:
                self._names_of(namespace)
                self.plans.publish(*arguments, generic=True, **modes)

        return namespace.write_lock.unchanged_since(epoch, publish, reads_vocabulary)

    def _publish_text(
        self,
        request,
        response,
        result,
        namespace,
        search: CoreSearch,
        epoch: Epoch,
        answer: bool = False,
        adaptive: bool = False,
        recency: tuple[int, tuple[float, float]] = (0, (0.0, 0.0)),
        recall_search: tuple | None = None,
    ) -> bool:
        """A plan for every text of the request's shape (and, with explicit required / forbidden
        names, for any names of the vocabulary, as many of each): the front parses each call's
        text with the namespace's live keys, embeds its affirmative part with the namespace's
        compiled encoder and names concepts from the names table the listeners keep current.
        Only where the encoder runs in the core. ``adaptive``: each call chooses its mode (the
        text's unknown words make its constraints uncertain)."""
        compiled = getattr(load_encoder(namespace.settings.encoder), "compiled", None)
        if compiled is None or not search.plain or (answer and search.records is None):
            return False
        explain = (request.explain if request.HasField("explain") else True) or request.include_context
        if explain and search.records is None:
            return False
        # Explicit names bind per call like a generic vector plan's, none skipped as unknown (whose
        # suggestions read the whole vocabulary).
        if result.plan.unknown_concepts:
            return False
        encoder, tokenizer = compiled  # the core's SharedTextRuns and WordPieceTokenizer
        recency_k, term = recency  # (recency_term's)
        if not namespace.settings.open_vocabulary:
            concept_vectors(namespace)  # encoded here, not under the write lock below (then cached)

        def publish() -> None:
            self._names_of(namespace)
            # a closed vocabulary's words that name no concept map to the closest concept's name
            mapping = None if namespace.settings.open_vocabulary else concept_vectors(namespace)
            self.plans.publish_text(
                namespace.name,
                request.SerializeToString(),
                search.index,
                search.ids,
                search.metadata,
                search.records,
                explain,
                search.request,
                response.SerializeToString(),
                namespace.vocabulary.compiled_keys(),
                QUERY_CUES.compiled,
                encoder,
                tokenizer,
                namespace.settings.open_vocabulary,
                answer_k=requested_k(request) if answer else 0,
                recency_k=recency_k,
                recency=term,
                adaptive=adaptive,
                rule_words=result.rule_words,
                confidence_words=result.confidence_words,
                confidence=result.confidence_levels,
                recall_search=recall_search,
                concept_vectors=mapping,
            )

        return namespace.write_lock.unchanged_since(epoch, publish)

    def _names_of(self, namespace) -> None:
        """Hands the front the namespace's names and lookup keys, once (a write keeps them current
        or drops them: _namespace_changed). Called under the namespace's write lock."""
        if not self.plans.has_names(namespace.name):
            vocabulary = namespace.vocabulary
            self.plans.set_names(namespace.name, vocabulary.names, vocabulary.compiled_keys())

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
            "polarmem_fast_front_plans", "Recall plans the compiled front holds", value=self._host.plans.size
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
