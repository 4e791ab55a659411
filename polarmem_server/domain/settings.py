"""A namespace's settings: one frozen value with one default per field, its validation (every
message names the field), the fields an update may change, and its record converters."""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from polarmem.storage.v1 import records_pb2
from polarmem_server.domain.partition import PARTITIONERS, PartitionSettings
from polarmem_server.domain.vocabulary import normalise
from polarmem_server.errors import InvalidArgument, quoted
from polarmem_server.index import STORAGES, AnnSpec, SpaceSpec

DEFAULT_TEMPLATES = (
    "Is there a {c} in this image? Answer Yes or No.",
    "Does this image contain a {c}? Answer Yes or No.",
    "Can you see a {c} in the picture? Answer Yes or No.",
    "Is a {c} visible in this image? Answer Yes or No.",
)
ENCODERS = ("minilm", "none")
DEFAULT_ENCODER = "minilm"
ENCODER_DIM = {"minilm": 384}
# The default `sem` space keeps an int8 copy of its rows beside the fp32 ones: every search scans
# the int8 rows with error bounds and re-ranks in fp32, so answers are exact, for 25 % more
# vector memory; at 100,000 notes a text Recall costs ~1.7 ms of CPU less and a vector Recall
# ~0.4 ms less than over fp32 rows alone (docs/performance.md, "A realistic mix", round 9).
DEFAULT_SPACES = (SpaceSpec("sem", 384, storage="int8"),)
MAX_TEMPLATES = 64
MAX_DECLARED_CONCEPTS = 100_000
# fullmatch, never match with ^...$: "$" also matches before a final newline ("pets" + "\n" passed, issue 49)
_NAMESPACE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
_SPACE_NAME = re.compile(r"[A-Za-z0-9_.-]{1,64}")
MAX_SPACE_DIM = 65_536
AUTO_PARTITIONER = "auto"  # the partitioner and default recall rule come from domain/rule_choice.py
DEFAULT_RHO = 0.85
DEFAULT_OPEN_VOCABULARY = True  # NamespaceSettings.open_vocabulary; an unset gRPC field means this

UPDATABLE_FIELDS = (
    "kappa",
    "rho",
    "rho_absent",
    "partitioner",
    "aliases",
    "templates",
    "degenerate_policy",
    "fixed_threshold",
    "template_std_max",
    "concepts",
    "declared_accuracy",
)
"""What UpdateNamespace may change (its FieldMask paths); the rest is fixed at creation."""

# Fields stored as plain scalars in NamespaceRecord under the same names.
_SCALAR_FIELDS = (
    "encoder",
    "kappa",
    "degenerate_policy",
    "fixed_threshold",
    "template_std_max",
    "partitioner",
    "rho",
    "rho_absent",
    "open_vocabulary",
)


def check_namespace_name(name: object) -> str:
    if not isinstance(name, str) or not _NAMESPACE_NAME.fullmatch(name):
        raise InvalidArgument(
            f"namespace name {quoted(name)} is invalid: use 1-64 letters, digits, '_', '.', '-', "
            "starting with a letter or digit"
        )
    return name


@dataclass(frozen=True)
class NamespaceSettings:
    name: str
    spaces: tuple[SpaceSpec, ...] = DEFAULT_SPACES
    encoder: str = DEFAULT_ENCODER  # "minilm" | "none" (clients send every vector)
    kappa: float = 1.0
    degenerate_policy: str = "fixed"
    fixed_threshold: float = 0.5
    template_std_max: float = 0.3
    templates: tuple[str, ...] = DEFAULT_TEMPLATES
    aliases: Mapping[str, str] = field(default_factory=dict)
    partitioner: str = "otsu"  # one of partition.PARTITIONERS, or "auto"
    rho: float = DEFAULT_RHO
    rho_absent: float = 0.0  # 0: the NOT_HAS side of the band is rho too
    concepts: tuple[str, ...] = ()  # the declared vocabulary
    declared_accuracy: float | None = None  # the verifier's accuracy as the operator states it
    # Opt-in approximate index (HNSW) for every single-vector space; None = exact search only.
    # Fixed at creation. Searches use it only when a request asks (exact=False).
    ann: AnnSpec | None = None
    # Every content word a text item mentions is a concept (text.content_terms); fixed at creation.
    # On by default, for every face (library, gRPC, clients, CLI, MCP, namespaces created on first
    # use): closed, a text note names no concept until one is declared, so it silently learns
    # nothing. False (a closed vocabulary: only declared concepts and verified ones) is the opt-out.
    open_vocabulary: bool = DEFAULT_OPEN_VOCABULARY

    @property
    def auto(self) -> bool:
        return self.partitioner == AUTO_PARTITIONER

    def partition_settings(self) -> PartitionSettings:
        """The partitioner's settings; an "auto" namespace partitions with the settings its rule
        resolves to (Namespace.partition_settings), so here it only checks the shared fields."""
        method = "otsu" if self.auto else self.partitioner
        return PartitionSettings(
            kappa=self.kappa,
            template_std_max=self.template_std_max,
            degenerate_policy=self.degenerate_policy,
            fixed_threshold=self.fixed_threshold,
            method=method,
            rho=self.rho,
            rho_absent=self.rho_absent,
        )

    def with_rule(self, partitioner: str, rho: float | None, rho_absent: float | None) -> NamespaceSettings:
        """These settings partitioning with a chosen rule's partitioner and band (unset: ours)."""
        return dataclasses.replace(
            self,
            partitioner=partitioner,
            rho=self.rho if rho is None else rho,
            rho_absent=self.rho_absent if rho_absent is None else rho_absent,
        )

    def validate(self) -> NamespaceSettings:
        """Raises InvalidArgument naming the first bad field; returns self."""
        check_namespace_name(self.name)
        if not isinstance(self.open_vocabulary, bool):
            raise InvalidArgument(f"config.open_vocabulary must be true or false, got {quoted(self.open_vocabulary)}")
        for name in ("kappa", "fixed_threshold", "template_std_max", "rho", "rho_absent"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
                raise InvalidArgument(f"config.{name} must be a finite number, got {quoted(value)}")
        if self.partitioner not in (*PARTITIONERS, AUTO_PARTITIONER):
            raise InvalidArgument(
                f"config.partitioner must be one of {', '.join((*PARTITIONERS, AUTO_PARTITIONER))}, "
                f"got {quoted(self.partitioner)}"
            )
        try:
            self.partition_settings()  # bad kappa / policy / threshold / rho
        except InvalidArgument as exc:
            raise InvalidArgument(f"config.{exc}") from None
        self._validate_auto()
        self._validate_spaces()
        self._validate_ann()
        if self.encoder not in ENCODERS:
            raise InvalidArgument(f"config.encoder must be 'minilm' or 'none', got {quoted(self.encoder)}")
        if self.encoder != "none":
            sem = next((s for s in self.spaces if s.name == "sem"), None)
            if sem is None or sem.dim != ENCODER_DIM[self.encoder] or sem.multi:
                raise InvalidArgument(
                    f"config.encoder {self.encoder!r} writes a {ENCODER_DIM[self.encoder]}-d single-vector "
                    "space named 'sem'; declare it or use encoder 'none'"
                )
        if (
            not self.templates
            or len(self.templates) > MAX_TEMPLATES
            or any(not isinstance(t, str) or "{c}" not in t for t in self.templates)
        ):
            raise InvalidArgument(f"config.templates: give 1-{MAX_TEMPLATES} templates, each containing '{{c}}'")
        for alias, target in self.aliases.items():
            if not normalise(alias) or not normalise(target):
                raise InvalidArgument(
                    f"config.aliases: {quoted(alias)} -> {quoted(target)}: both sides need letters or digits"
                )
        if len(self.concepts) > MAX_DECLARED_CONCEPTS:
            raise InvalidArgument(
                f"config.concepts: at most {MAX_DECLARED_CONCEPTS} concepts, got {len(self.concepts)}"
            )
        for concept in self.concepts:
            if not isinstance(concept, str) or not normalise(concept):
                raise InvalidArgument(f"config.concepts: {quoted(concept)} has no letters or digits")
        return self

    def _validate_auto(self) -> None:
        accuracy = self.declared_accuracy
        if accuracy is not None and (
            isinstance(accuracy, bool)
            or not isinstance(accuracy, (int, float))
            or not math.isfinite(accuracy)
            or not 0.0 <= accuracy <= 1.0
        ):
            raise InvalidArgument(
                f"config.declared_accuracy must be a number in [0, 1] (the verifier's share of "
                f"right answers), got {quoted(accuracy)}; leave it unset if unknown"
            )
        # "auto" chooses the band together with the partitioner (the dev set measured them as a
        # pair), so a band given with it would be silently overridden: refuse it instead.
        if self.auto and (self.rho != DEFAULT_RHO or self.rho_absent):
            raise InvalidArgument(
                f"config.rho / config.rho_absent: partitioner '{AUTO_PARTITIONER}' chooses the band "
                "with the partitioner (docs/partitioners.md); leave them unset, or name a partitioner"
            )

    def _validate_spaces(self) -> None:
        names = [s.name for s in self.spaces]
        if len(set(names)) != len(names):
            raise InvalidArgument(f"config.spaces: a space name appears twice in {quoted(names)}")
        for i, space in enumerate(self.spaces):
            if not _SPACE_NAME.fullmatch(space.name):
                raise InvalidArgument(
                    f"config.spaces[{i}].name {quoted(space.name)} is invalid: use 1-64 letters, digits, '_', '.', '-'"
                )
            if not 1 <= space.dim <= MAX_SPACE_DIM:
                raise InvalidArgument(f"config.spaces[{i}].dim must lie in [1, {MAX_SPACE_DIM}], got {space.dim}")
            if space.storage not in STORAGES:
                raise InvalidArgument(f"config.spaces[{i}].storage must be one of {STORAGES}")

    def _validate_ann(self) -> None:
        if self.ann is None:
            return
        if not isinstance(self.ann, AnnSpec):
            raise InvalidArgument(f"config.ann must be an AnnSpec or None, got {type(self.ann).__name__}")
        if all(s.multi for s in self.spaces):
            raise InvalidArgument(
                "config.ann: an approximate index needs a single-vector space; this namespace has none"
            )

    def updated(self, changes: Mapping[str, object]) -> NamespaceSettings:
        """These settings with `changes` (only UPDATABLE_FIELDS) applied and validated; declared
        concepts are only ever added to."""
        unknown = sorted(set(changes) - set(UPDATABLE_FIELDS))
        if unknown:
            raise InvalidArgument(
                f"update_mask: {quoted(unknown)} cannot be updated; use {', '.join(UPDATABLE_FIELDS)}"
            )
        values: dict[str, Any] = dict(changes)  # each value is checked by validate()
        if values.get("partitioner") == AUTO_PARTITIONER:
            # the previous partitioner's band does not carry over to "auto" (it picks its own)
            values.setdefault("rho", DEFAULT_RHO)
            values.setdefault("rho_absent", 0.0)
        if "concepts" in values:
            values["concepts"] = tuple(dict.fromkeys((*self.concepts, *values["concepts"])))
        return dataclasses.replace(self, **values).validate()

    def to_record(self, created_ms: int) -> records_pb2.NamespaceRecord:
        return records_pb2.NamespaceRecord(
            name=self.name,
            created_ms=created_ms,
            templates=list(self.templates),
            aliases=dict(self.aliases),
            concepts=list(self.concepts),
            declared_accuracy=self.declared_accuracy,
            spaces=[
                records_pb2.SpaceRecord(name=s.name, dim=s.dim, multi=s.multi, storage=s.storage) for s in self.spaces
            ],
            **{name: getattr(self, name) for name in _SCALAR_FIELDS},
            **ann_to_record(self.ann),
        )

    @classmethod
    def from_record(cls, record: records_pb2.NamespaceRecord) -> NamespaceSettings:
        """The settings a record holds; a field an older server did not write (empty / zero)
        takes this class's default. An empty encoder was written by servers whose namespaces
        had no encoder: "none"."""
        defaults = {f.name: f.default for f in dataclasses.fields(cls) if f.default is not dataclasses.MISSING}
        scalars = {name: getattr(record, name) or defaults[name] for name in _SCALAR_FIELDS}
        scalars["encoder"] = record.encoder or "none"
        scalars["kappa"] = record.kappa  # 0 is a legal kappa (no margin)
        scalars["fixed_threshold"] = record.fixed_threshold  # so is a threshold of 0
        scalars["rho_absent"] = record.rho_absent  # 0 means "same as rho"
        # false is a closed vocabulary, as it was made (and as every namespace stored before the
        # field existed was): the default applies to new namespaces only
        scalars["open_vocabulary"] = record.open_vocabulary
        return cls(
            name=record.name,
            spaces=tuple(SpaceSpec(s.name, s.dim, s.multi, s.storage or "fp32") for s in record.spaces),
            templates=tuple(record.templates) or DEFAULT_TEMPLATES,
            aliases=dict(record.aliases),
            concepts=tuple(record.concepts),
            declared_accuracy=record.declared_accuracy if record.HasField("declared_accuracy") else None,
            ann=ann_from_record(record),
            **scalars,
        )


# The stored form of `ann`: NamespaceRecord.ann (absent = no approximate index).
_ANN_FIELDS = ("kind", "m", "ef_construction", "ef_search", "exact_below", "exact_factor", "nlist", "nprobe")


def ann_to_record(ann: AnnSpec | None) -> dict:
    """``{"ann": AnnRecord}`` for NamespaceRecord's keyword arguments ({} for no index)."""
    if ann is None:
        return {}
    return {"ann": records_pb2.AnnRecord(**{name: getattr(ann, name) for name in _ANN_FIELDS})}


def ann_from_record(record: records_pb2.NamespaceRecord) -> AnnSpec | None:
    """The namespace's approximate index setting (None where the record has none)."""
    if not record.HasField("ann"):
        return None
    stored = {name: getattr(record.ann, name) for name in _ANN_FIELDS}
    # records written before ivf existed hold no nlist / nprobe: they take AnnSpec's defaults
    return AnnSpec(**{name: value for name, value in stored.items() if value or name not in ("nlist", "nprobe")})
