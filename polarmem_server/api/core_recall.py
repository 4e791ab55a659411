"""The one core entry for Recall, as the server calls it: a request planned from its namespace's
*view* and answered by the core (cpp/front/namespace_view.hpp ``NamespaceViews::recall``, module
``polarmem_server._front``), without the interpreter.

Both doors call it. The compiled front (api/fast_front.py; one per process with ``--processes``
> 1) calls it for every Recall before handing one over; the Python servicer calls it (one call,
the interpreter lock released) where the Python listener has the address: ``--front python``, or
where the front was not built but this module was. Before the library answers a Recall the core
declined, the servicer does what only the library can and asks again (``answer``): it makes the
namespace's view where the core holds none, and lets an open vocabulary learn the names the
request gives; a consistency token it has applied already, and full items it adds itself
(``as_planned``). A request the core still does not answer — one the library would refuse, one
only the library answers (a name the vocabulary lacks unless allow_unknown_concepts skips it,
several query rows, a text the compiled tokenizer declines) — is answered by the library, which then hands the core the namespace's view (``offer_view``); with
``core_views`` eager a background pass (``keep_views``) makes the views and reads the items'
records back without waiting for a Recall.

The view holds the namespace's compiled index, item ids, metadata postings and records (the
backend's ``front_view``: the local backend's core objects; a backend that searches itself,
Milvus, has none: the servicer hands the entry its searches per call, ``BackendSearches``), its concept names and lookup keys,
its text path (query cues, compiled encoder and tokenizer, and a closed vocabulary's concept
vectors), whether it has an approximate index and an open vocabulary, its rule (mode and
words), its mode rules (mode_rules below) and the library's bounds on a request's fields. A write that changes what the
view holds (settings, rule, an alias), deletes the namespace, or reopens it (a replica catching
up: Memory.reopen_namespace) drops it (domain/namespace.py ChangeLock); a write that only
appends concepts extends its names and keys. docs/fast-front.md has the design and the limits.
"""

from __future__ import annotations

import logging
import threading

from polarmem.v1 import memory_service_pb2 as pb

from polarmem_server import _core
from polarmem_server.domain import items, query
from polarmem_server.domain.confidence import NO_CONFIDENCE, ConfidenceRanking, absent_level, present_level
from polarmem_server.domain.negation import CLINICAL as QUERY_CUES  # the cues recall.py parses queries with
from polarmem_server.domain.query import RecallMode
from polarmem_server.domain.rule_choice import RuleChoice, confidence_in_force, describe_confidence
from polarmem_server.domain.vocabulary import Appended
from polarmem_server.errors import InvalidArgument
from polarmem_server.index import MAX_TOP_K
from polarmem_server.library import CONFIDENCE_NOT_APPLIED, concept_vectors, learn_names, wait_for_encoder
from polarmem_server.storage.backend import SearchRequest
from polarmem_server.scoring.encoder import load_encoder

log = logging.getLogger("polarmem.core_recall")

# The view keeper's pass (a server daemon): a view a write dropped is made again this soon after,
# so the next Recall is the core's too; every SCAN_EVERY passes it also looks for namespaces
# that never had one (opened at start-up, created since).
KEEP_VIEWS_INTERVAL_S = 0.05
SCAN_EVERY = 20
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


def mode_rules(rule: RuleChoice, ranks_by_confidence: bool = True) -> list[tuple[int, int, bool, tuple, bool]]:
    """The library's own rules for each mode and rank_by_confidence in a namespace of `rule`
    (confidence_in_force, query.check_ranking_mode, query.check_recency, called here), for the
    core to look up instead of deciding them again: (mode code, rank_by_confidence code, accepted,
    ranking in force, recency allowed). `ranks_by_confidence` False (a backend that keeps no
    confidence grades): a ranking in force is not applied, and mode_reason says so, as recall.py."""
    out = []
    for code, named in MODE_NAMES.items():
        mode = named or RecallMode(rule.recall_mode)
        for coded, requested in RANK_BY_CONFIDENCE.items():
            try:
                ranking = confidence_in_force(rule.rule, named is None, requested, named.value if named else None)
            except ValueError:
                out.append((code, coded, False, ranking_words(NO_CONFIDENCE), False))
                continue
            accepted = _passes(query.check_ranking_mode, ranking, mode)
            # a valid term: only the mode and the ranking decide (an approximate search the front declines itself)
            recency = _passes(query.check_recency, 3600.0, None, mode, ranking, False)
            words = ranking_words(ranking) if ranks_by_confidence or not ranking.used else NOT_APPLIED
            out.append((code, coded, accepted, words, recency))
    return out


NOT_APPLIED = (True, 0, 0, 0.0, 0.0, CONFIDENCE_NOT_APPLIED)  # a ranking the backend cannot apply


def _passes(check, *arguments) -> bool:
    """Whether the library's `check` accepts `arguments` (it raises InvalidArgument otherwise)."""
    try:
        check(*arguments)
    except InvalidArgument:
        return False
    return True


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


class CoreRecall:
    """The views of the namespaces whose Recalls the core answers, kept current with the
    memory's writes, and the one call that answers a Recall from them."""

    def __init__(self) -> None:
        # not `from polarmem_server import _front`: with no stub of it, mypy calls that a missing attribute
        import polarmem_server._front as _front

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
        self._memory = None
        # namespaces whose view the keeper is to make, each with a count of the times it was asked
        self._wanted: dict[str, int] = {}
        self._wanted_lock = threading.Lock()
        self._passes = 0
        # namespaces whose stored records are being read back into the core: the last id read
        # (None: from the first); and how many each still lacked when its last read-back ended
        self._reading: dict[str, str | None] = {}
        self._left_after_reading: dict[str, int] = {}

    def attach(self, memory) -> bool:
        """Views from now on follow the memory's writes (ChangeLock calls _namespace_changed). A
        backend whose indexes are the core's holds the items' records in it too, for explained
        answers; one that searches itself (Milvus) is called by the core for each search."""
        self._memory = memory
        memory.change_listeners.append(self._namespace_changed)
        if memory.backend.searches_in_core:
            memory.backend.keep_records()  # explained answers read the items' records from the core
        return True

    def answer(
        self, request: pb.RecallRequest, front_asked: bool = False, deadline: float | None = None
    ) -> pb.RecallResponse | None:
        """The core's response to ``request``, or None when the library must answer it, after
        what only the library can do first: the namespace's view made now where the core holds
        none (or one older than its closed vocabulary's concepts), and an open vocabulary's
        unknown names learned once the core has checked the rest of the request (a write:
        concept_backfill.learn_names, as the library's recall learns them; a replica learns from
        its primary instead). ``front_asked``: the compiled front asked the core already (it hands
        over only what the core declined), so the core is asked again only after one of those.
        ``deadline``: the call's (time.monotonic()), for the encoder a new view loads."""
        asked = self.as_planned(request)
        given = asked.SerializeToString()
        memory = self._memory
        # a backend that searches itself is called by the core for this call's searches
        searches = None
        if memory is not None and not memory.backend.searches_in_core:
            searches = BackendSearches(memory.backend, request.namespace)
        if front_asked and asked is request:
            answered, outcome = None, "library"
        else:
            answered, outcome = self.views.recall(given, backend=searches)
        if answered is None and memory is not None:
            namespace = memory.live_namespace(request.namespace)
            if namespace is None:
                return None  # the library says it is missing
            open_names = namespace.settings.open_vocabulary and bool(request.required or request.forbidden)
            if not self.views.current(namespace.name, len(namespace.vocabulary)):
                wait_for_encoder(namespace.settings.encoder, deadline)
                if self.offer_view(namespace, namespace.write_lock.view_epoch):
                    answered, outcome = self.views.recall(given, backend=searches)
            elif front_asked and open_names:  # (why the front declined is not said over the socket)
                answered, outcome = self.views.recall(given, backend=searches)
            if outcome == "names_to_learn" and not memory.backend.read_only:
                learn_names(memory.writer, namespace, [*request.required, *request.forbidden])
                answered, outcome = self.views.recall(given, names_learned=True, backend=searches)
        response = self._parsed(answered)
        if response is not None and memory is not None and memory.backend.shared:
            response = self._caught_up(memory, request, given, searches, response)
        return response

    def _caught_up(self, memory, request, given: bytes, searches, response: pb.RecallResponse):
        """Where other processes bind concepts in the same namespaces (Milvus), a name or word the
        answer left unknown may have been bound meanwhile: as the library does, catch up once
        (its new names reach the view: _namespace_changed) and ask again."""
        parse = response.parse
        namespace = memory.live_namespace(request.namespace)
        if not (parse.unknown or parse.unknown_concepts) or namespace is None:
            return response
        if not memory.writer.catch_up(namespace):
            return response
        answered, _ = self.views.recall(given, backend=searches)
        return self._parsed(answered)

    @staticmethod
    def as_planned(request: pb.RecallRequest) -> pb.RecallRequest:
        """The request as the core plans it at the library's door: its consistency token already
        applied (the servicer reads at its level, reads_at_requested_level, and a backend's
        searches run on the servicer's thread), full items left to the servicer, which adds them
        from the explained hits' records as the library gives them (the front, which can do
        neither, hands such requests over)."""
        if not (request.consistency_token or request.include_items):
            return request
        asked = pb.RecallRequest()
        asked.CopyFrom(request)
        asked.consistency_token = b""
        if request.include_items:
            asked.include_items = False
            asked.explain = True  # (the library explains every hit it gives a full item of)
        return asked

    @staticmethod
    def _parsed(answered: bytes | None) -> pb.RecallResponse | None:
        return None if answered is None else pb.RecallResponse.FromString(answered)

    def _namespace_changed(self, namespace: str, appended: Appended | None) -> None:
        """A write changed what the namespace's view holds (ChangeLock, which calls this before
        letting its lock go): ``appended`` holds the concepts it only appended; None drops the
        view, which the keeper makes again once the write is done. A view's keys are brought up to
        date first, so a text or a name naming a new concept binds it as soon as its write returns."""
        if appended is None:
            self.views.forget(namespace)
            self._want(namespace)
            return
        if self.views.holds(namespace):
            appended.compiled_keys()
            self.views.append_names(namespace, appended.first, appended.names)
        else:
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

    def offer_view(self, namespace, epoch: int) -> bool:
        """After a Recall the library answered, or from the view keeper: hands the core the
        namespace's view unless it holds a current one, and only if ``namespace`` is still the
        live namespace of its name and no write dropped views since ``epoch`` (its ``view_epoch``,
        read before the Recall or the keeper's look) was read; it never waits for a writer.
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
                names=vocabulary.names,
                keys=vocabulary.compiled_keys(),
                approximate=settings.ann is not None,
                open_vocabulary=settings.open_vocabulary,
                rule_mode=_core.SearchMode.__members__[rule.recall_mode],
                rule_words=rule.words,
                mode_rules=mode_rules(rule, memory.backend.ranks_by_confidence),
                text=text,
                spaces=[(name, spec.dim) for name, spec in namespace.spaces.items() if not spec.multi],
            )

        try:
            return namespace.write_lock.unchanged_since(epoch, publish) and self.views.holds(namespace.name)
        except ValueError as refused:  # never fails the call the library has answered
            log.warning("no view of %s handed to the core: %s", namespace.name, refused)
            return False


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
