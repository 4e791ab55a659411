"""A namespace as the library holds it: its settings, vocabulary and score model, and the lock
that serialises its writes. Everything here can be rebuilt from the storage backend (settings
and score model from the NamespaceRecord, vocabulary from the concept bindings); the items and
their search state live behind the backend."""

from __future__ import annotations

import threading
from collections.abc import Sequence

from polarmem.storage.v1 import records_pb2
from polarmem_server.domain.mixtures import BetaMixture, calibration_fields, calibration_from_fields
from polarmem_server.domain.settings import NamespaceSettings
from polarmem_server.domain.vocabulary import Vocabulary, normalise
from polarmem_server.errors import FailedPrecondition, InvalidArgument, quoted
from polarmem_server.index import SpaceSpec


class Namespace:
    def __init__(self, settings: NamespaceSettings, created_ms: int, calibration: BetaMixture | None = None) -> None:
        self._settings = settings
        self.created_ms = created_ms
        self.vocabulary = Vocabulary(aliases=settings.aliases)
        self._calibration = calibration
        self.write_lock = threading.RLock()
        self._calibration_tried_at = 0  # pooled scores at the last score-model fit attempt

    @classmethod
    def from_record(cls, record: records_pb2.NamespaceRecord) -> Namespace:
        calibration = calibration_from_fields(record.calibration) if record.HasField("calibration") else None
        return cls(NamespaceSettings.from_record(record), record.created_ms, calibration)

    def to_record(self) -> records_pb2.NamespaceRecord:
        record = self._settings.to_record(self.created_ms)
        if self._calibration is not None:
            record.calibration.CopyFrom(records_pb2.CalibrationRecord(**calibration_fields(self._calibration)))
        return record

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
        for alias in added:
            if self.vocabulary.lookup(alias) is not None and normalise(alias) not in self.vocabulary.aliases:
                raise InvalidArgument(f"config.aliases: {quoted(alias)} is already a concept of its own")
        for alias, target in added.items():
            self.vocabulary.add_alias(alias, target)
        self._settings = settings

    def set_calibration(self, model: BetaMixture | None, tried_at: int | None = None) -> None:
        self._calibration = model
        if tried_at is not None:
            self._calibration_tried_at = tried_at

    def bind_concepts(self, names: Sequence[str], ids: Sequence[int]) -> None:
        """Adds concepts the backend bound to `ids`; the vocabulary's dense ids must agree."""
        for name, concept_id in zip(names, ids):
            local, _ = self.vocabulary.ensure(name)
            if local != concept_id:
                raise FailedPrecondition(f"namespace {self.name!r}: concept {name!r} has id {concept_id} in the store "
                                         f"but {local} in this process; restart the server")
