"""Namespace settings changes over the stored items (library layer; Memory delegates here):
UpdateNamespace re-partitions from the kept scores and applies new names to the stored text
(concept_backfill.py); Calibrate fits the score model from a labelled set."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from polarmem_server.library import concept_backfill
from polarmem_server.domain.mixtures import BetaMixture, fit_supervised
from polarmem_server.domain.namespace import Namespace
from polarmem_server.domain.rule_choice import LabelledSet
from polarmem_server.errors import InvalidArgument
from polarmem_server.library.writes import Writer

VOCABULARY_FIELDS = {"concepts", "aliases"}  # settings that name concepts and partition nothing


def update_namespace(writer: Writer, namespace: Namespace, changes: Mapping[str, Any]) -> tuple[int, int]:
    """Changes partition / vocabulary settings (settings.UPDATABLE_FIELDS) and re-partitions
    the stored items from their kept scores (no re-scoring). Returns (items
    re-partitioned, items whose states changed). Bad input changes nothing."""
    before = namespace.settings
    with namespace.write_lock:
        settings = namespace.settings.updated(changes)
        namespace.apply_settings(settings)  # an "auto" namespace re-chooses its rule here
        if namespace.partitioner == "calibrated" and namespace.calibration is None:
            writer.fit_calibration(namespace)
        # declared concepts are bound before the record is stored: a process that adopts the
        # record (the settings refresh, daemons.py) then finds their bindings
        writer.concept_ids(namespace, settings.concepts)
        writer.backend.update_namespace(namespace.to_record())
        repartitioned = changed = 0
        if set(changes) - VOCABULARY_FIELDS:  # names alone move no partition: no pass over the store
            repartitioned, changed = writer.rewrite_all(namespace)
    # New names apply to the items stored before them (concept_backfill.py), batch by batch.
    names = [c for c in settings.concepts if c not in before.concepts]
    aliases = {a: t for a, t in settings.aliases.items() if a not in before.aliases}
    if names or aliases:
        with namespace.write_lock:  # an alias's target may be new: it is bound like a declared concept
            targets = set(writer.concept_ids(namespace, [*names, *aliases.values()]).values())
        applied = concept_backfill.apply_names(writer, namespace, [*names, *aliases], targets)
        repartitioned, changed = repartitioned + applied, changed + applied
    return repartitioned, changed


def calibrate(writer: Writer, namespace: Namespace, scores: Sequence[float], present: Sequence[bool]) -> BetaMixture:
    """Fit the two class components of the namespace's score model from a labelled
    calibration set (P(Yes) scores and whether each object was present): they replace any
    pooled fit and stay; the prevalences keep being fitted on the stored scores. The set's
    balanced accuracy and class counts are kept: an "auto" namespace re-chooses its rule
    from them. Stored items are re-partitioned when the partitioner in force is
    "calibrated" or the rule changed it."""
    values = np.asarray(scores, dtype=np.float64).ravel()
    if len(values) != len(present):
        raise InvalidArgument(
            f"p_yes and present must have the same length (got {len(values)} and {len(present)}): one label per score"
        )
    if values.size and (not np.all(np.isfinite(values)) or values.min() < 0 or values.max() > 1):
        raise InvalidArgument("p_yes: every calibration score must be a finite P(Yes) in [0, 1]")
    labels = np.asarray(present, dtype=bool)
    with namespace.write_lock:
        partitioner_before = namespace.partitioner
        model = fit_supervised(values, labels)  # InvalidArgument (too few of a class) before any change
        namespace.set_calibration(model)
        namespace.set_labelled_set(LabelledSet.of(values, labels))  # an "auto" namespace re-chooses
        writer.fit_calibration(namespace)  # the concepts' prevalences, from the stored scores
        writer.backend.update_namespace(namespace.to_record())
        # New components move a calibrated partition; a re-chosen partitioner moves any.
        if namespace.partitioner == "calibrated" or namespace.partitioner != partitioner_before:
            writer.rewrite_all(namespace)
        calibration = namespace.calibration
        assert calibration is not None  # set above; fit_calibration only refits its prevalences
        return calibration
