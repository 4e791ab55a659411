"""A namespace as the library holds it: its settings, vocabulary, score model and rule (the
partitioner and default recall mode, domain/rule_choice.py), and the lock that serialises its
writes. Everything here can be rebuilt from the storage backend (settings, score model and what
the namespace knows about its verifier from the NamespaceRecord, vocabulary from the concept
bindings) plus the server's engine name; the items and their search state live behind the
backend."""

from __future__ import annotations

from collections.abc import Sequence

from polarmem.storage.v1 import records_pb2
from polarmem_server._core import WriteLock
from polarmem_server.domain.mixtures import BetaMixture, calibration_fields, calibration_from_fields
from polarmem_server.domain.rule_choice import LabelledSet, RuleChoice, choose_rule, configured_rule, knowledge_of
from polarmem_server.domain.settings import NamespaceSettings
from polarmem_server.domain.vocabulary import Vocabulary, normalise
from polarmem_server.errors import FailedPrecondition, InvalidArgument, quoted
from polarmem_server.index import SpaceSpec


class ChangeLock:
    """The lock that serialises a namespace's writes (reentrant), telling listeners when a write
    changed what the compiled front's view of the namespace was made from (``fingerprint()``:
    settings, rule and what chose it, aliases; read when the outermost holder takes the lock and
    again before it lets go), or ``invalidate()`` was called (a deletion): the listeners get the
    namespace's name and drop the view. Item writes change none of it: the front's hits come
    from the live index, and its vocabulary is the namespace's own object, so a concept a write
    appends is bound and named there as soon as it is added.

    The listeners run before the lock is let go, so no other write and no hand-over of a view
    comes between the change and what they do with it. ``view_epoch`` counts the writes that
    dropped the view; a reader that saw the same epoch before and after its work, and checks it
    while holding the lock, knows what it read is still the namespace's. The compiled front's
    views are handed over and dropped that way (library/core_recall.py)."""

    def __init__(self, name: str, fingerprint) -> None:
        self.name = name
        self._fingerprint = fingerprint
        self._lock = WriteLock()  # the core's: one lock for every door that writes (a native Remember too)
        self._depth = 0
        self._before = None
        self._invalidated = False
        self.view_epoch = 0
        self.listeners: list = []  # shared with the library (Memory.change_listeners)

    @property
    def core_lock(self) -> WriteLock:
        """The core's lock itself, for the core's own writer (the native Remember): it holds it
        without the listeners, as its item writes change nothing a view was made from."""
        return self._lock

    def acquire(self, blocking: bool = True) -> bool:
        if not self._lock.acquire(blocking):
            return False
        self._depth += 1
        if self._depth == 1:
            self._before = self._fingerprint()
        return True

    def release(self) -> None:
        try:
            if self._depth == 1:
                self._tell_listeners()
        finally:
            self._depth -= 1
            self._lock.release()

    def _tell_listeners(self) -> None:
        invalidated, self._invalidated = self._invalidated, False
        if not invalidated and self._fingerprint() == self._before:
            return
        self.view_epoch += 1
        for listener in list(self.listeners):
            listener(self.name)

    def invalidate(self) -> None:
        """Call while holding the lock: its release tells the listeners (the namespace is going)."""
        self._invalidated = True

    def unchanged_since(self, epoch: int, then, wait_s: float = 0.0) -> bool:
        """Runs ``then()`` while holding the lock, if no write holds it and no write that dropped
        the view ran since ``epoch`` (a ``view_epoch``) was read; returns whether it ran. Waits
        up to ``wait_s`` for a write that holds the lock (0: never waits); never counts as a write."""
        if not (self._lock.acquire(True, wait_s) if wait_s > 0 else self._lock.acquire(False)):
            return False
        try:
            if self._depth or self.view_epoch != epoch:
                return False
            then()
            return True
        finally:
            self._lock.release()

    def __enter__(self) -> ChangeLock:
        self.acquire()
        return self

    def __exit__(self, *exc) -> None:
        self.release()


class Namespace:
    def __init__(
        self,
        settings: NamespaceSettings,
        created_ms: int,
        calibration: BetaMixture | None = None,
        labelled_set: LabelledSet | None = None,
        engine: str = "",
        vocabulary: Vocabulary | None = None,
    ) -> None:
        """`vocabulary`: the backend's own concept table (Backend.vocabulary), which the
        namespace's aliases are added to; None: a table of the namespace's own."""
        self._settings = settings
        self.created_ms = created_ms
        self.vocabulary = vocabulary if vocabulary is not None else Vocabulary()
        for alias, target in settings.aliases.items():
            # shadow: the aliases are the namespace's as stored or created, and a stored concept
            # may share an alias's name (declared in the same create); a new alias is checked
            # against the concepts by apply_settings
            self.vocabulary.add_alias(alias, target, shadow=True)
        self._calibration = calibration
        self.revision = 0  # moves with the settings, the rule or what chose it (plans depend on them)
        self.write_lock = ChangeLock(settings.name, self.plan_state)
        self._calibration_tried_at = 0  # pooled scores at the last score-model fit attempt
        self._labelled_set = labelled_set
        self._engine = engine
        self._rule = self._choose()

    @classmethod
    def from_record(
        cls, record: records_pb2.NamespaceRecord, engine: str = "", vocabulary: Vocabulary | None = None
    ) -> Namespace:
        calibration = calibration_from_fields(record.calibration) if record.HasField("calibration") else None
        labelled = None
        if record.HasField("labelled_set"):
            stored = record.labelled_set
            labelled = LabelledSet(stored.balanced_accuracy, stored.present, stored.absent)
        return cls(NamespaceSettings.from_record(record), record.created_ms, calibration, labelled, engine, vocabulary)

    def to_record(self) -> records_pb2.NamespaceRecord:
        record = self._settings.to_record(self.created_ms)
        if self._calibration is not None:
            record.calibration.CopyFrom(records_pb2.CalibrationRecord(**calibration_fields(self._calibration)))
        if self._labelled_set is not None:
            record.labelled_set.CopyFrom(
                records_pb2.LabelledSetRecord(
                    balanced_accuracy=self._labelled_set.accuracy,
                    present=self._labelled_set.present,
                    absent=self._labelled_set.absent,
                )
            )
        return record

    # ---- the rule: partitioner + default recall mode ----------------------------------------

    def _choose(self) -> RuleChoice:
        s = self._settings
        if not s.auto:
            return configured_rule(s.partitioner, s.rho, s.rho_absent)
        return choose_rule(knowledge_of(self._labelled_set, s.declared_accuracy, self._engine))

    @property
    def rule(self) -> RuleChoice:
        """The partitioner and default recall mode in force, and why."""
        return self._rule

    @property
    def partition_settings(self) -> NamespaceSettings:
        """The settings items are partitioned with: an "auto" namespace's carry its rule's
        partitioner and band."""
        if not self._settings.auto:
            return self._settings
        rule = self._rule.rule
        return self._settings.with_rule(rule.partitioner, rule.rho, rule.rho_absent)

    @property
    def partitioner(self) -> str:
        """The partitioner in force (the rule's, for "auto")."""
        return self._rule.partitioner

    def set_labelled_set(self, labelled: LabelledSet) -> RuleChoice:
        """Records what a labelled calibration set said about the verifier; returns the rule now in force."""
        self._labelled_set = labelled
        self._rule = self._choose()
        self.revision += 1
        return self._rule

    def plan_state(self) -> tuple[int, int]:
        """What the compiled front's view of this namespace was made from, as counters (ChangeLock):
        settings, rule and what chose it (revision), aliases (the vocabulary's rewrites)."""
        return self.revision, self.vocabulary.rewrites

    @property
    def name(self) -> str:
        return self._settings.name

    @property
    def settings(self) -> NamespaceSettings:
        return self._settings

    @property
    def spaces(self) -> dict[str, SpaceSpec]:
        return {s.name: s for s in self._settings.spaces}

    @property
    def calibration(self) -> BetaMixture | None:
        return self._calibration

    @property
    def calibration_tried_at(self) -> int:
        return self._calibration_tried_at

    def apply_settings(self, settings: NamespaceSettings) -> None:
        """New (validated) settings; the spaces and encoder are fixed at creation."""
        if settings.spaces != self._settings.spaces or settings.encoder != self._settings.encoder:
            raise FailedPrecondition("a namespace's spaces and encoder are fixed at creation")
        added = {a: t for a, t in settings.aliases.items() if a not in self._settings.aliases}
        shadow = settings.open_vocabulary  # every word is a concept there: an alias redirects it
        for alias in added:
            if (
                not shadow
                and self.vocabulary.lookup(alias) is not None
                and normalise(alias) not in self.vocabulary.aliases
            ):
                raise InvalidArgument(f"config.aliases: {quoted(alias)} is already a concept of its own")
        for alias, target in added.items():
            self.vocabulary.add_alias(alias, target, shadow)
        self._settings = settings
        self._rule = self._choose()
        self.revision += 1

    def adopt_record(self, record: records_pb2.NamespaceRecord) -> None:
        """Settings, score model and labelled set as another process stored them (the spaces,
        encoder and creation time are fixed, so the record is of this namespace)."""
        self.apply_settings(NamespaceSettings.from_record(record))
        self._calibration = calibration_from_fields(record.calibration) if record.HasField("calibration") else None
        stored = record.labelled_set
        self._labelled_set = (
            LabelledSet(stored.balanced_accuracy, stored.present, stored.absent)
            if record.HasField("labelled_set")
            else None
        )
        self._rule = self._choose()
        self.revision += 1

    def set_calibration(self, model: BetaMixture | None, tried_at: int | None = None) -> None:
        self._calibration = model
        self.revision += 1
        if tried_at is not None:
            self._calibration_tried_at = tried_at

    def bind_concepts(self, names: Sequence[str], ids: Sequence[int]) -> None:
        """Adds concepts the backend bound to `ids`; the vocabulary's dense ids must agree."""
        for name, concept_id in zip(names, ids):
            local = self.vocabulary.bind(name)
            if local != concept_id:
                raise FailedPrecondition(
                    f"namespace {self.name!r}: concept {name!r} has id {concept_id} in the store "
                    f"but {local} in this process; restart the server"
                )
