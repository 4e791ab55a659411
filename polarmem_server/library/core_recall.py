"""The one core entry for Recall: a request planned from its namespace's *view* and answered by
the core (cpp/front/namespace_view.hpp ``NamespaceViews::recall``, module
``polarmem_server._front``), without the interpreter. Every Recall is answered there: the
compiled front's (api/fast_front.py; one per process with ``--processes`` > 1), the Python
servicer's and the library's own ``Memory.recall`` (recall.py).

Before asking again after the core declined, this does what only the library can
(``answer``): it makes the namespace's view where the core holds none (waiting for a write that
holds the namespace), lets an open vocabulary learn the names the request gives, reads stored
records back into the core after a start-up, catches up with concepts other processes bound;
a consistency token it has applied already, and full items the servicer adds itself
(``as_planned``). A request with a field out of its bounds the core refuses itself, naming the
field and the fix (cpp/include/polarmem/request_checks.hpp writes the words; the mode rules'
words are the library's, handed over with the view): this raises its refusal. With
``core_views`` eager a background pass (``keep_views``) makes the views
and reads the items' records back without waiting for a Recall.

The view holds the namespace's compiled index, item ids, metadata postings and records (the
backend's ``front_view``: the local backend's core objects; a backend that searches itself,
Milvus, has none: the entry is handed its searches per call, ``BackendSearches``), its
vocabulary (the namespace's own object), its text path (query cues, compiled encoder and tokenizer, and a closed
vocabulary's concept vectors), whether it has an approximate index and an open vocabulary, its
rule (mode and words), its mode rules (mode_rules below) and the library's bounds on a request's
counts. A write that changes what the view holds (settings, rule, an alias), deletes the
namespace, or reopens it (a replica catching up: Memory.reopen_namespace) drops it
(domain/namespace.py ChangeLock); a write that only appends concepts changes nothing in it.
docs/fast-front.md has the design and the limits.
"""

from __future__ import annotations

import logging
import threading
import time

from polarmem.v1 import memory_service_pb2 as pb

from polarmem_server import _core
from polarmem_server.domain import query
from polarmem_server.domain.confidence import NO_CONFIDENCE, ConfidenceRanking, absent_level, present_level
from polarmem_server.domain.namespace import Namespace
from polarmem_server.domain.negation import CLINICAL as QUERY_CUES  # the cues the core parses queries with
from polarmem_server.domain.query import RecallMode
from polarmem_server.domain.rule_choice import RuleChoice, confidence_in_force, describe_confidence
from polarmem_server.errors import (
    FailedPrecondition,
    InvalidArgument,
    LearnedByPrimary,
    PolarMemError,
    ResourceExhausted,
    Unavailable,
    quoted,
)
from polarmem_server.index import MAX_TOP_K
from polarmem_server.library.concept_backfill import learn_names
from polarmem_server.library.concept_vectors import concept_vectors
from polarmem_server.library.encoder_warmup import wait_loaded as wait_for_encoder
from polarmem_server.scoring.encoder import load_encoder
from polarmem_server.storage.backend import SearchRequest

log = logging.getLogger("polarmem.core_recall")

# The view keeper's pass (a server daemon): a view a write dropped is made again this soon after,
# so the next Recall is the core's too; every SCAN_EVERY passes it also looks for namespaces
# that never had one (opened at start-up, created since).
KEEP_VIEWS_INTERVAL_S = 0.05
SCAN_EVERY = 20
# mode_reason's words where the namespace's ranking asks for confidence and the backend keeps none
CONFIDENCE_NOT_APPLIED = "confidence ranking not applied: this backend keeps no confidence grades"
# How long a Recall waits for a write holding a namespace the core has no view of (it cannot
# make the view meanwhile) when the call gives no deadline.
VIEW_WAIT_S = 30.0
# How often one Recall makes a view before it gives up (each write that drops the view while it
# is being made costs one).
MAX_VIEWS_MADE = 3
# How often a Recall the core neither answered nor refused is asked again (a passing reason:
# compactions renumbering the items under each of its own retries).
TRANSIENT_RETRIES = 20
# Stored records read back into the core per pass, for namespaces whose records it lacks (after a
# start-up or a replica's rebuild): 100,000 items in ~2.5 s of passes.
RECORDS_PER_PASS = 2000


def unavailable_reason() -> str | None:
    """Why the core entry (and the compiled front with it) cannot run here (None: it can)."""
    try:
        import polarmem_server._front  # noqa: F401 - (this form: see CoreRecall)
    except ImportError as exc:
        return (
            f"the compiled Recall front was not built ({exc}); install Debian's libgrpc++-dev and "
            "protobuf-compiler-grpc and reinstall the package (`make install` does both)"
        )
    return None


# Every RecallMode code a request may carry (0: none named, the rule's), and rank_by_confidence
# as the front codes it: 0 unset, 1 false, 2 true.
MODE_NAMES = {pb.RECALL_MODE_UNSPECIFIED: None, **{getattr(pb, f"RECALL_MODE_{m.name}"): m for m in RecallMode}}
RANK_BY_CONFIDENCE = {0: None, 1: False, 2: True}


def mode_rules(rule: RuleChoice, ranks_by_confidence: bool = True) -> list[tuple[int, int, str, tuple, str]]:
    """The library's own rules for each mode and rank_by_confidence in a namespace of `rule`
    (confidence_in_force, query.ranking_refusal, query.recency_refusal, called here), for the
    core to look up instead of deciding them again: (mode code, rank_by_confidence code, why the
    combination is refused or "", ranking in force, why the recency term may not join it or "").
    `ranks_by_confidence` False (a backend that keeps no confidence grades): a ranking in force
    is not applied, and mode_reason says so."""
    out = []
    for code, named in MODE_NAMES.items():
        mode = named or RecallMode(rule.recall_mode)
        for coded, requested in RANK_BY_CONFIDENCE.items():
            try:
                ranking = confidence_in_force(rule.rule, named is None, requested, named.value if named else None)
            except ValueError as refused:
                out.append((code, coded, str(refused), ranking_words(NO_CONFIDENCE), ""))
                continue
            words = ranking_words(ranking) if ranks_by_confidence or not ranking.used else NOT_APPLIED
            out.append((code, coded, query.ranking_refusal(ranking, mode), words, query.recency_refusal(mode, ranking)))
    return out


NOT_APPLIED = (True, 0, 0, 0.0, 0.0, CONFIDENCE_NOT_APPLIED)  # a ranking the backend cannot apply
# The error a refusal of the core raises, by its gRPC status code: a Recall's (recall_plan.hpp
# Refusal: 3, 9) and the store's refusal of a note the core writes (note_remember.cpp status_of).
REFUSALS: dict[int, type[PolarMemError]] = {
    3: InvalidArgument,
    8: ResourceExhausted,
    9: FailedPrecondition,
    14: Unavailable,
}


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


MODE_CODES = {mode: code for code, mode in MODE_NAMES.items() if mode is not None}  # (MODE_NAMES reversed)


class CoreRecall:
    """The views of the namespaces whose Recalls the core answers, kept current with the
    memory's writes, and the one call that answers a Recall from them."""

    def __init__(self, agent_rule: tuple[float, float, float] | None = None) -> None:
        """`agent_rule`: answer mode's (topic coverage, verified bonus, contradiction penalty),
        the core's kAgentRule unless the dev sweep (benchmarks/agent_memory_sweep.py) varies it."""
        reason = unavailable_reason()
        if reason is not None:
            raise FailedPrecondition(f"Recall needs the core's entry: {reason}")
        # not `from polarmem_server import _front`: with no stub of it, mypy calls that a missing attribute
        import polarmem_server._front as _front

        self.views = _front.NamespaceViews(
            max_top_k=MAX_TOP_K,
            max_ef_search=query.MAX_EF_SEARCH,
            max_soft_lambda=query.MAX_SOFT_LAMBDA,
            max_query_concepts=query.MAX_QUERY_CONCEPTS,
            default_top_k=query.DEFAULT_TOP_K,
            default_recency_weight=query.DEFAULT_RECENCY_WEIGHT,
            **({} if agent_rule is None else {"agent_rule": agent_rule}),
        )
        self._memory = None
        # namespaces whose view the keeper is to make, each with a count of the times it was asked
        self._wanted: dict[str, int] = {}
        self._wanted_lock = threading.Lock()
        self._passes = 0
        # namespaces whose stored records are being read back into the core: the last id read
        # (None: from the first); and how many each still lacked when its last read-back ended
        self._reading: dict[str, str | None] = {}
        self._left_after_reading: dict[str, int] = {}

    def attach(self, memory) -> None:
        """This answers the memory's Recalls from now on (``memory.core``; the one it had before
        stops following its writes), its views following the memory's writes (ChangeLock calls
        _namespace_changed). A backend whose indexes are the core's holds the items' records in
        it too, for explained answers; one that searches itself (Milvus) is called by the core
        for each search."""
        before = getattr(memory, "core", None)
        if before is not None and before._namespace_changed in memory.change_listeners:
            memory.change_listeners.remove(before._namespace_changed)
        self._memory = memory
        memory.core = self
        memory.change_listeners.append(self._namespace_changed)
        if memory.backend.searches_in_core:
            memory.backend.keep_records()  # explained answers read the items' records from the core

    def remember(self, request: pb.RememberRequest) -> pb.RememberResponse | None:
        """A new note stored by the core (cpp/front/note_remember.cpp), as the compiled front
        stores it; None where the library stores it (no writer in the view, evidence to verify or
        score, an id already stored, input the library refuses in its own words). A write the
        store refused raises the store's status and words (a full disk: RESOURCE_EXHAUSTED)."""
        answered, code, words = self.views.remember(request.SerializeToString())
        if answered is not None:
            return pb.RememberResponse.FromString(answered)
        if code >= 0:
            raise REFUSALS.get(code, PolarMemError)(words)
        return None

    def answer(self, request: pb.RecallRequest, deadline: float | None = None) -> pb.RecallResponse:
        """The core's response to ``request``, asked again after what only the library can do
        where the core declined: the namespace's view made now where the core holds none (or
        one older than its closed vocabulary's concepts; waiting for a write that holds the
        namespace), an open vocabulary's unknown names learned once the core has checked the
        rest of the request (a write: concept_backfill.learn_names; a replica raises
        LearnedByPrimary, and its server hands the call to the primary), the items' stored
        records read back into the core (after a start-up), concepts other processes bound caught
        up with. A request the core refuses (a field out of
        its bounds) raises its refusal: InvalidArgument or FailedPrecondition, in the core's words.
        ``deadline``: the call's (time.monotonic()), for the encoder a new view loads and a write
        to wait for."""
        memory = self._memory
        assert memory is not None, "attach() a memory first"
        given = self.as_planned(request).SerializeToString()
        # a backend that searches itself is called by the core for this call's searches
        searches = None if memory.backend.searches_in_core else BackendSearches(memory.backend, request.namespace)
        answered, outcome, refusal = self.views.recall(given, backend=searches)
        names_learned = caught_up = records_read = False
        views_made = retries = 0
        while answered is None:
            # NotFound in the library's words (and a replica may have reopened it meanwhile)
            namespace = memory.namespace(request.namespace)
            if not self.views.current(namespace.name, len(namespace.vocabulary)) and views_made < MAX_VIEWS_MADE:
                wait_for_encoder(namespace.settings.encoder, deadline)
                self._make_view(namespace, deadline)
                views_made += 1
            elif outcome == "names_to_learn" and not names_learned:
                if memory.backend.read_only:
                    raise LearnedByPrimary(f"namespace {quoted(namespace.name)} must learn a name this call gives")
                learn_names(memory.writer, namespace, [*request.required, *request.forbidden])
                names_learned = True
            elif not caught_up and memory.writer.catch_up(namespace):
                # another process bound names this one lacked (Milvus): the view is made again with them
                caught_up = True
                self.views.forget(namespace.name)
                continue
            elif outcome == "refused":
                code, message = refusal
                raise REFUSALS[code](message)
            elif (
                not records_read and memory.backend.searches_in_core and memory.backend.records_to_read(namespace.name)
            ):
                self._read_back_all(namespace.name)
                records_read = True
            elif retries < TRANSIENT_RETRIES:  # a compaction renumbered the items under every try
                retries += 1
                time.sleep(0.001 * retries)
            else:
                raise PolarMemError(
                    f"the core did not answer a Recall of namespace {quoted(namespace.name)} after {TRANSIENT_RETRIES} tries "
                    f"(outcome {outcome!r}); please report it with the request"
                )
            answered, outcome, refusal = self.views.recall(given, names_learned=names_learned, backend=searches)
        response = pb.RecallResponse.FromString(answered)
        if memory.backend.shared and not caught_up:
            namespace = memory.namespace(request.namespace)
            response = self._caught_up(namespace, given, searches, names_learned, response)
        return response

    def _make_view(self, namespace: Namespace, deadline: float | None) -> None:
        """The namespace's view, made now: a write holding the namespace is waited for (until
        ``deadline``, or VIEW_WAIT_S), as is one that dropped the view while it was made. A view
        the core cannot hold (offer_view logs why) is tried a few times, then left: the Recall
        ends in an error asking for a report (the core refuses nothing without a view)."""
        give_up = deadline if deadline is not None else time.monotonic() + VIEW_WAIT_S
        for _ in range(MAX_VIEWS_MADE):
            left = give_up - time.monotonic()
            if left <= 0:
                raise FailedPrecondition(
                    f"namespace {quoted(namespace.name)}: a write held it past the call's deadline; retry"
                )
            if self.offer_view(namespace, namespace.write_lock.view_epoch, wait_s=left):
                return
            if self.views.current(namespace.name, len(namespace.vocabulary)):
                return  # (made meanwhile by another call or the keeper)

    def _read_back_all(self, name: str) -> None:
        """Every stored record the core lacks of namespace ``name``, read back now (after a
        start-up, before the background read-back reached them)."""
        assert self._memory is not None  # (answer's)
        backend = self._memory.backend
        last = backend.read_back_records(name, None, RECORDS_PER_PASS)
        while last is not None:
            last = backend.read_back_records(name, last, RECORDS_PER_PASS)

    def _caught_up(self, namespace, given: bytes, searches, names_learned: bool, response: pb.RecallResponse):
        """Where other processes bind concepts in the same namespaces (Milvus), a name or word the
        answer left unknown may have been bound meanwhile: catch up once, make the view again
        with the new names and ask again."""
        parse = response.parse
        assert self._memory is not None  # (answer's)
        if not (parse.unknown or parse.unknown_concepts) or not self._memory.writer.catch_up(namespace):
            return response
        self.views.forget(namespace.name)  # made again with the new names
        self._make_view(namespace, None)
        answered, _, _ = self.views.recall(given, names_learned=names_learned, backend=searches)
        return response if answered is None else pb.RecallResponse.FromString(answered)

    @staticmethod
    def as_planned(request: pb.RecallRequest) -> pb.RecallRequest:
        """The request as the core plans it here: its consistency token already applied (the
        servicer reads at its level, reads_at_requested_level, and a backend's searches run on
        the servicer's thread), full items left to the servicer, which adds them from the
        explained hits' records (the front, which can do neither, hands such requests over)."""
        if not (request.consistency_token or request.include_items):
            return request
        asked = pb.RecallRequest()
        asked.CopyFrom(request)
        asked.consistency_token = b""
        if request.include_items:
            asked.include_items = False
            asked.explain = True  # (every hit given with its full item is explained)
        return asked

    def _namespace_changed(self, namespace: str) -> None:
        """A write changed what the namespace's view was made from (ChangeLock, which calls this
        before letting its lock go): the view goes, and the keeper makes it again once the write
        is done. (Appended concepts change nothing here: the view holds the vocabulary itself.)"""
        self.views.forget(namespace)
        self._want(namespace)

    def _want(self, namespace: str) -> None:
        with self._wanted_lock:
            self._wanted[namespace] = self._wanted.get(namespace, 0) + 1

    def keep_views(self) -> int:
        """One pass of the view keeper (the server runs it every KEEP_VIEWS_INTERVAL_S): hands the
        core a view of each namespace that lost its view to a write or never had one, so that
        the first Recall after start-up, a settings change or a replica's catch-up is the core's
        too. A namespace whose lock a write holds is tried again next pass. Returns the views
        handed over."""
        memory = self._memory
        if memory is None:
            return 0
        self._passes += 1
        if self._passes % SCAN_EVERY == 1:
            for namespace in memory.list_namespaces():
                if not self.views.holds(namespace.name):
                    self._want(namespace.name)
        with self._wanted_lock:
            wanted = dict(self._wanted)
        handed = 0
        for name, asked in wanted.items():
            namespace = memory.live_namespace(name)
            if namespace is not None and not self.views.current(name, len(namespace.vocabulary)):
                try:
                    made = self.offer_view(namespace, namespace.write_lock.view_epoch)
                except Exception as exc:  # noqa: BLE001 - one namespace's failure must not stop the others'
                    log.debug("no view of %s made: %s", name, exc)
                    made = False
                if not made:
                    continue  # a write holds it, or dropped the view meanwhile: next pass
                handed += 1
            with self._wanted_lock:
                if self._wanted.get(name) == asked:  # not asked again meanwhile
                    del self._wanted[name]
        if handed or self._passes % SCAN_EVERY == 1:
            self._find_records_to_read(memory)
        self._read_back_some(memory)
        return handed

    def _find_records_to_read(self, memory) -> None:
        """Namespaces whose items' records the core lacks (stored before a start-up, or a replica
        rebuilt them), more of them than when their last read-back ended."""
        for namespace in memory.list_namespaces():
            name = namespace.name
            if name not in self._reading:
                missing = memory.backend.records_to_read(name)
                if missing > self._left_after_reading.get(name, 0):
                    self._reading[name] = None

    def _read_back_some(self, memory) -> None:
        """One batch of stored records into the core, for the first namespace that lacks some, so
        that explained Recalls of items stored before a start-up are the core's too."""
        first = next(iter(self._reading.items()), None)
        if first is None:
            return
        name, after = first
        last, left = None, 0
        try:
            if memory.live_namespace(name) is not None:
                last = memory.backend.read_back_records(name, after, RECORDS_PER_PASS)
                if last is None:
                    left = memory.backend.records_to_read(name)
        except Exception as exc:  # noqa: BLE001 - deleted meanwhile, or the store is closing
            log.debug("records of %s not read back: %s", name, exc)
        if last is None:
            del self._reading[name]
            self._left_after_reading[name] = left
        else:
            self._reading[name] = last

    def offer_view(self, namespace, epoch: int, wait_s: float = 0.0) -> bool:
        """For a Recall the core has no view for, or from the view keeper: hands the core the
        namespace's view unless it holds a current one, and only if ``namespace`` is still the
        live namespace of its name and no write dropped views since ``epoch`` (its ``view_epoch``,
        read before) was read; waits up to ``wait_s`` for a write holding the namespace (0: never).
        Returns whether it handed one over."""
        memory = self._memory
        vocabulary = namespace.vocabulary
        if memory is None:
            return False
        if self.views.current(namespace.name, len(vocabulary)):
            return False
        settings = namespace.settings
        encoder = load_encoder(settings.encoder)
        compiled = getattr(encoder, "compiled", None)
        sem = namespace.spaces.get("sem")
        # text queries embed into the `sem` space (recall.py); any other layout leaves them to the
        # library. Without an encoder a text gives concepts only, natively too.
        native_text = compiled is not None and sem is not None and not sem.multi and sem.dim == encoder.dim
        if native_text and not settings.open_vocabulary:
            concept_vectors(namespace)  # encoded here, not under the write lock below (then cached)

        def publish() -> None:
            if memory.live_namespace(namespace.name) is not namespace:
                return  # deleted (and perhaps created again) since the Recall
            # a backend that searches itself has no core objects: the core calls it (BackendSearches)
            core = memory.backend.front_view(namespace.name) if memory.backend.searches_in_core else (None,) * 4
            if core is None:
                return
            rule = namespace.rule
            text = None
            if native_text:
                # a closed vocabulary's words that name no concept map to the closest concept's name
                mapping = None if settings.open_vocabulary else concept_vectors(namespace)
                text = (QUERY_CUES.compiled, *compiled, mapping)
            elif encoder is None:
                text = (QUERY_CUES.compiled, None, None, None)
            self.views.set(
                namespace.name,
                *core,
                writer=note_writer(memory, namespace),
                vocabulary=vocabulary,
                approximate=settings.ann is not None,
                open_vocabulary=settings.open_vocabulary,
                rule_mode=_core.SearchMode.__members__[rule.recall_mode],
                rule_words=rule.words,
                mode_rules=mode_rules(rule, memory.backend.ranks_by_confidence),
                text=text,
                spaces=[(name, spec.dim) for name, spec in namespace.spaces.items() if not spec.multi],
            )

        try:
            return namespace.write_lock.unchanged_since(epoch, publish, wait_s) and self.views.holds(namespace.name)
        except ValueError as refused:  # a view the core cannot hold: the Recall says why (refuse)
            log.warning("no view of %s handed to the core: %s", namespace.name, refused)
            return False


def note_writer(memory, namespace: Namespace) -> tuple | None:
    """What the core stores the namespace's new notes with (cpp/front/namespace_view.hpp
    NamespaceWriter: the front's Remember and the servicer's both ask the core first), or None
    where the library stores every item: a backend whose writes are its own (Milvus, a process
    publishing to replicas, a replica), a multi-vector space, the "calibrated" partitioner (its
    score model refits as scores arrive, writes.py maybe_recalibrate), or a `sem` vector the
    core cannot encode. A note's `sem` is encoded by the encoder's own passes for writes
    (``note_runs``), as the library encodes it, not the query passes text Recalls share."""
    parts = memory.backend.note_writer(namespace.name) if memory.backend.searches_in_core else None
    settings = namespace.settings
    if parts is None or namespace.partitioner == "calibrated":
        return None
    if any(spec.multi for spec in namespace.spaces.values()):
        return None
    encodes_sem = settings.encoder != "none" and "sem" in namespace.spaces
    note_runs = None
    if encodes_sem:
        encoder = load_encoder(settings.encoder)
        note_runs = getattr(encoder, "note_runs", None)
        if encoder is None or note_runs is None or namespace.spaces["sem"].dim != encoder.dim:
            return None  # (a `sem` of another width than the encoder's: the library's to refuse)
    return (
        *parts,
        namespace.write_lock.core_lock,
        QUERY_CUES.compiled,  # (domain/text.py reads notes by the same table: negation.CLINICAL)
        str(len(settings.templates)),
        note_runs,
    )


class BackendSearches:
    """A backend's searches and record reads in one namespace, as the core entry calls them for
    a view without an index (a backend that searches itself: Milvus): the core plans and runs the
    Recall (its modes, strict's merge, the recency term, answer mode, explanations, the context)
    and this only turns each of its searches into the backend's SearchRequest, as recall.py's own
    searches are made (the request's weights, kinds, metadata filter and exactness), and its
    record reads into get_items."""

    def __init__(self, backend, namespace: str) -> None:
        self.backend, self.namespace = backend, namespace

    def search(self, vectors, metadata, **fields):
        """One of the core's searches: `vectors` (space, values, weight), the call's `metadata`
        filter pairs, and the search's own fields (concepts, mode, k, ranking, kinds, exactness,
        absent_verified, with_records), named as SearchRequest names them."""
        found = self.backend.search(
            self.namespace,
            SearchRequest(
                vectors={space: values for space, values, _ in vectors},
                weights={space: weight for space, _, weight in vectors},
                metadata_equals=dict(metadata),
                **fields,
            ),
        )
        tiers = found.tier_counts
        hits = [
            (hit.item_id, hit.tier, hit.score, None if hit.record is None else hit.record.SerializeToString())
            for hit in found.hits
        ]
        return hits, (tiers["conflict"], tiers["neutral"], tiers["entailed"])

    def records(self, ids):
        return [
            b"" if record is None else record.SerializeToString()
            for record in self.backend.get_items(self.namespace, ids)
        ]
