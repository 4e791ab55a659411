"""Shared test settings: deterministic Hypothesis runs (fixed seeds, never clock seeds)."""

import os

from hypothesis import HealthCheck, settings

from milvus_server import milvus_server  # noqa: F401  (the real Milvus, one per session: tests/milvus_server.py)

settings.register_profile(
    "ci",
    derandomize=True,
    deadline=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.register_profile("dev", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("POLARMEM_HYPOTHESIS_PROFILE", "ci"))
