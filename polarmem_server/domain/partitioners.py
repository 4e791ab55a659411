"""The full partitioner registry: importing this module registers every method of
``partition.PARTITIONERS`` (Otsu in domain/partition.py, the others in domain/mixtures.py)."""

from __future__ import annotations

from polarmem_server.domain import mixtures  # noqa: F401 - registers min_error, mixture, calibrated
from polarmem_server.domain.partition import PARTITIONERS, REGISTRY, partition_scores

if set(REGISTRY) != set(PARTITIONERS):  # a declared method without an implementation is a bug
    raise ImportError(f"partitioners declared but not registered: {sorted(set(PARTITIONERS) - set(REGISTRY))}")

__all__ = ["PARTITIONERS", "REGISTRY", "partition_scores"]
