"""Confidence grades for the local backend's index: from each item's scored means (its index
record) to the core's per-(item, concept) grades (domain/confidence.py's grid).

Otsu items (and every item a posterior partitioner did not place) are graded by their mean score;
items the ``calibrated`` partitioner placed are graded by their posterior under the namespace's
current score model (with each concept's own prevalence), as rule_sweep.py --confidence measured.
The grader follows the namespace record: a new calibration re-partitions (and so re-grades)
every item, through the writes that follow ``update_namespace``."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from polarmem.storage.v1.records_pb2 import NamespaceRecord
from polarmem_server.domain import confidence as grid
from polarmem_server.domain.mixtures import BetaMixture, calibration_from_fields
from polarmem_server.index import GradeCSR
from polarmem_server.storage.local.index_record import IndexRecordBatch, decode_index_records, index_record


class ConfidenceGrader:
    def __init__(self, record: NamespaceRecord, concept_names: Callable[[], list[str]]) -> None:
        """`concept_names()`: the namespace's names by concept id (for per-concept priors)."""
        self.model: BetaMixture | None = (
            calibration_from_fields(record.calibration)
            if record.HasField("calibration") and record.calibration.fitted_on
            else None
        )
        self._names = concept_names
        self._priors = np.zeros(0)

    def batch(self, batch: IndexRecordBatch) -> GradeCSR | None:
        """Grades of a decoded batch as CSR (None when no item has a scored concept)."""
        if not len(batch.scored_ids):
            return None
        ids, means = batch.scored_ids, batch.scored_means.astype(np.float64)
        confidence = means
        counts = np.diff(batch.scored_indptr)
        posterior = np.repeat(batch.posterior, counts) if len(batch.posterior) else np.zeros(len(ids), bool)
        if self.model is not None and posterior.any():
            priors = self._prior_table(self.model, int(ids.max()) + 1)[ids[posterior]]
            confidence = means.copy()
            confidence[posterior] = self.model.posterior(means[posterior], priors)
        # Every scored concept is listed, graded or not: its confidence also feeds the weights.
        return GradeCSR(batch.scored_indptr, ids.astype(np.uint32), grid.grades(confidence), confidence)

    def record(self, serialised: bytes) -> GradeCSR | None:
        """Grades of one stored item (a replaced item's new version, serialised)."""
        return self.batch(decode_index_records([index_record(serialised)]))

    def _prior_table(self, model: BetaMixture, size: int) -> np.ndarray:
        """π per concept id (its own prevalence where the model fitted one, else the shared π)."""
        if len(self._priors) < size:
            names = self._names()
            self._priors = model.priors_for(names, len(names)) if names else np.full(size, model.prior)
            if len(self._priors) < size:
                self._priors = np.concatenate([self._priors, np.full(size - len(self._priors), model.prior)])
        return self._priors
