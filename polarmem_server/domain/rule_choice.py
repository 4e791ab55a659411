"""Which partitioner and recall rule a namespace should use, from what it knows about its verifier.

No single rule is best for every verifier (issue 18): precise posterior states with `strict`
recall win with a strong verifier and lose with a weak one, where Otsu + `hard` (the paper's
rule) is safer. A namespace knows one of three things about its verifier, in this order of trust:

1. a **labelled calibration set** (the `Calibrate` RPC: scores whose truth a person checked) —
   its balanced 0.5-threshold accuracy, taken at the lower end of a 95 % interval so a small set
   does not buy a rule its verifier cannot carry;
2. a **declared accuracy** (the operator's statement, e.g. from a model card);
3. the **engine** that scores for it — the zero-shot `embedding` engine has its own measured rule;

and with none of these it gets Otsu + `hard`, the paper's rule: `strict` wins from accuracy 0.8
up but collapses with a weak zero-shot verifier, which an unknown verifier may be. The table below was chosen on the tuning half of the dev set
(polarmem_server/data/coco_val2014_dev10k.jsonl.gz) by `benchmarks/rule_sweep.py` and kept only
where the choice held, frozen, on its held-out half; docs/partitioners.md has the figures. Rules were
measured at points (0.7, 0.8, 0.9, 0.95): an accuracy gets the rule of the nearest measured point,
the lower one from the midpoint down (a weaker verifier's rule is the safe side). Nearest, not "the
highest point not above": a labelled set is read at its lower bound, which for a verifier of
accuracy 0.95 lies below 0.95 however large the set, so "not above" would never give any verifier the
rule measured at 0.95.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from polarmem_server.domain.confidence import NO_CONFIDENCE, ConfidenceRanking

MIN_LABELLED_PER_CLASS = 20  # below this a calibration set says too little to pick a rule on


@dataclass(frozen=True)
class Rule:
    partitioner: str  # otsu | min_error | mixture | calibrated
    recall_mode: str  # hard | strict
    rho: float | None = None  # posterior partitioners only
    rho_absent: float | None = None
    confidence: ConfidenceRanking = NO_CONFIDENCE  # flags and weights within tiers

    @property
    def ranks_by_confidence(self) -> bool:
        return self.confidence.used


@dataclass(frozen=True)
class VerifierKnowledge:
    """What a namespace knows about the verifier that scores its items."""

    labelled_accuracy: float | None = None  # balanced accuracy at 0.5 on a labelled calibration set
    labelled_present: int = 0  # scores of present objects in that set
    labelled_absent: int = 0  # scores of absent objects in that set
    declared_accuracy: float | None = None  # stated by the operator
    engine: str = ""  # the server-side engine that scores, if any ("embedding", "vlm", "lexical", ...)


@dataclass(frozen=True)
class LabelledSet:
    """A labelled calibration set, summarised as a rule choice reads it (stored with the
    namespace, so the choice survives a restart without the set)."""

    accuracy: float  # balanced accuracy at 0.5
    present: int
    absent: int

    @classmethod
    def of(cls, scores: Sequence[float] | np.ndarray, present: Sequence[bool] | np.ndarray) -> LabelledSet:
        return cls(*balanced_accuracy(scores, present))


@dataclass(frozen=True)
class RuleChoice:
    rule: Rule
    reason: str
    accuracy_used: float | None = None  # the accuracy the choice rests on, if any

    @property
    def partitioner(self) -> str:
        return self.rule.partitioner

    @property
    def recall_mode(self) -> str:
        return self.rule.recall_mode

    @property
    def confidence(self) -> ConfidenceRanking:
        return self.rule.confidence

    @property
    def words(self) -> str:
        """How a Recall's mode_reason says the rule chose its mode: "<mode> (<why>)"."""
        return f"{self.recall_mode} ({self.reason})"


# Chosen on the dev set's tuning half and kept only where the choice held, frozen, on its held-out
# half (benchmarks/rule_sweep.py, docs/evaluation/dev/sweep_*.json; held-out Conflict@3 / nDCG@10):
# * 0.70: otsu + hard 0.362 / 0.616 (strict 0.322 but nDCG@10 0.591: more than 0.01 lower);
# * 0.80: otsu + strict 0.162 / 0.757 (hard 0.257 / 0.735);
# * 0.90: otsu + strict 0.088 / 0.869 — calibrated from a labelled set (rho 0.5, rho_absent 0.99)
#   won on the tuning half (0.078 vs 0.097) and lost on the held-out half (0.097), so it is not used;
# * 0.95: with a labelled set, calibrated rho 0.5 / rho_absent 0.99 + strict 0.049 / 0.947 (otsu +
#   strict 0.071 / 0.913); without one, otsu + strict (pooled calibrated was not checked held-out).
# Confidence flags within tiers (benchmarks/rule_sweep.py --confidence, whole halves, seeds 0-2, the
# flag chosen on the tuning half then frozen; held-out Conflict@3 / nDCG@10 with vs without it,
# docs/quality.md §5): 0.7 none (every flag worse on tuning); 0.8 present > 0.99, 0.092 / 0.870 vs
# 0.094 / 0.865; 0.9 present > 0.99, 0.051 / 0.927 vs 0.058 / 0.917; 0.95 declared present > 0.9,
# 0.019 / 0.970 vs 0.031 / 0.946; 0.95 labelled absent < 0.03 then present > 0.99, 0.016 / 0.970 vs
# 0.018 / 0.967; the embedding engine none (with or without a labelled set: no flag won on tuning).
# 0.9 searched again for issue 18's target (<= 0.040 with nDCG@10 >= 0.93; rule_sweep.py --grid,
# benchmarks/results/rule_grid_sim0.9*.json, docs/quality.md §6): every partitioner x band x flag
# pair under strict (752 rules, tuning seeds 0-5); the pick, otsu + strict + present > 0.95 (tuning
# 0.046 / 0.937), did not hold on the held-out half (0.056 / 0.933 vs this rule's 0.051 / 0.927) and
# costs a verifier that is really 0.8 (0.162 vs 0.100 on tuning), so 0.9 keeps present > 0.99.
# (present > 0.98, off the index's grid, held out at 0.049 / 0.933: two top-3 slots of 900; not adopted.)
# Confidence weights within tiers (rule_sweep.py --weights, benchmarks/results/rule_weights.json,
# docs/quality.md §7): per rule in force, its flags or none x w_present {0 .. 1.5} x w_absent {0 ..
# 1.2} on the tuning half (seeds 0-5), the pick frozen and read once on the held-out half (seeds
# 0-2; Conflict@3 / nDCG@10, pick vs the rule before): 0.7 0.2 / 0.4, 0.154 / 0.802 vs 0.187 / 0.786;
# 0.8 no flag + 0.6 / 0.2, 0.084 / 0.876 vs 0.092 / 0.870; 0.9 no flag + 0.6 / 0.4, 0.041 / 0.944
# vs 0.051 / 0.927; 0.95 declared present > 0.9 + 0.4 / 0.8, 0.016 / 0.976 vs 0.019 / 0.970; the
# embedding engine 0.2 / 0.4, 0.154 / 0.795 vs 0.208 / 0.768; the engine with a labelled set 0 / 0.4,
# 0.169 / 0.816 vs 0.171 / 0.810. Not adopted: 0.95 labelled (0.017 vs 0.016 held out).
DECLARED: tuple[tuple[float, Rule], ...] = (
    (0.70, Rule("otsu", "hard", confidence=ConfidenceRanking(present_weight=0.2, absent_weight=0.4))),
    (0.80, Rule("otsu", "strict", confidence=ConfidenceRanking(present_weight=0.6, absent_weight=0.2))),
    (0.90, Rule("otsu", "strict", confidence=ConfidenceRanking(present_weight=0.6, absent_weight=0.4))),
    (
        0.95,
        Rule("otsu", "strict", confidence=ConfidenceRanking(present_above=0.9, present_weight=0.4, absent_weight=0.8)),
    ),
)
LABELLED: tuple[tuple[float, Rule], ...] = DECLARED[:3] + (
    (0.95, Rule("calibrated", "strict", 0.5, 0.99, ConfidenceRanking(present_above=0.99, absent_below=0.03))),
)
# The zero-shot embedding engine (real scores): with a labelled set, calibrated rho 0.5 /
# rho_absent 0.93 + strict held out at 0.230 / 0.730 against otsu + hard 0.262 / 0.671; otsu +
# strict collapses (0.331 / 0.595).
BY_ENGINE: dict[str, Rule] = {
    "embedding": Rule("otsu", "hard", confidence=ConfidenceRanking(present_weight=0.2, absent_weight=0.4))
}
BY_ENGINE_LABELLED: dict[str, Rule] = {
    "embedding": Rule("calibrated", "strict", 0.5, 0.93, ConfidenceRanking(absent_weight=0.4))
}
# Knowing nothing: otsu + hard. strict is better at every simulated accuracy from 0.8 up but
# collapses with a weak zero-shot verifier (the embedding engine above), which an unknown
# verifier may be.
SAFEST = Rule("otsu", "hard")


def balanced_accuracy(
    scores: Sequence[float] | np.ndarray, present: Sequence[bool] | np.ndarray
) -> tuple[float, int, int]:
    """(balanced 0.5-threshold accuracy, present count, absent count) of a labelled set."""
    s = np.asarray(scores, dtype=np.float64)
    p = np.asarray(present, dtype=bool)
    if s.shape != p.shape or s.ndim != 1:
        raise ValueError("scores and present must be 1-d and of the same length")
    n_present, n_absent = int(p.sum()), int((~p).sum())
    if not n_present or not n_absent:
        return float("nan"), n_present, n_absent
    accuracy = 0.5 * (float((s[p] > 0.5).mean()) + float((s[~p] <= 0.5).mean()))
    return accuracy, n_present, n_absent


def _lower_bound(accuracy: float, present: int, absent: int) -> float:
    """Lower end of a 95 % normal interval for a balanced accuracy (each class's rate has
    variance r(1-r)/n; the mean of two has a quarter of their sum)."""
    clipped = min(max(accuracy, 1e-6), 1 - 1e-6)
    variance = 0.25 * clipped * (1 - clipped) * (1 / present + 1 / absent)
    return accuracy - 1.96 * math.sqrt(variance)


def rule_for_accuracy(accuracy: float, labelled: bool = False) -> Rule | None:
    """The rule measured at the accuracy nearest `accuracy` (at a midpoint the lower one), from
    the table for a namespace with a labelled calibration set, whose components `calibrated`
    then uses, or the one for a declared accuracy; None below the lowest measured accuracy."""
    table = LABELLED if labelled else DECLARED
    if accuracy + 1e-9 < table[0][0]:
        return None
    chosen = table[0][1]
    for (low, _), (high, rule) in zip(table, table[1:]):
        if accuracy > (low + high) / 2 + 1e-9:
            chosen = rule
    return chosen


def choose_rule(knowledge: VerifierKnowledge) -> RuleChoice:
    """Partitioner + recall rule for a namespace, and why (see the module doc for the order)."""
    rule: Rule | None
    if knowledge.labelled_accuracy is not None:
        present, absent = knowledge.labelled_present, knowledge.labelled_absent
        if not math.isfinite(knowledge.labelled_accuracy) or not 0.0 <= knowledge.labelled_accuracy <= 1.0:
            raise ValueError(f"labelled_accuracy must lie in [0, 1], got {knowledge.labelled_accuracy}")
        if min(present, absent) >= MIN_LABELLED_PER_CLASS:
            bound = _lower_bound(knowledge.labelled_accuracy, present, absent)
            if knowledge.engine in BY_ENGINE_LABELLED:
                rule = BY_ENGINE_LABELLED[knowledge.engine]
                return RuleChoice(
                    rule,
                    f"the {knowledge.engine} engine with a labelled calibration set "
                    f"({present} present / {absent} absent scores): {_describe(rule)}, "
                    f"components from that set, is the dev-set choice",
                    bound,
                )
            rule = rule_for_accuracy(bound, labelled=True)
            if rule is not None:
                return RuleChoice(
                    rule,
                    f"labelled calibration set: balanced accuracy {knowledge.labelled_accuracy:.3f} "
                    f"({present} present / {absent} absent scores, 95 % lower bound {bound:.3f}); "
                    f"{_describe(rule)} is the dev-set choice at that accuracy",
                    bound,
                )
            return RuleChoice(
                SAFEST,
                f"labelled calibration set: accuracy lower bound {bound:.3f} is below the "
                f"weakest verifier measured ({DECLARED[0][0]}); the safest rule",
                bound,
            )
    if knowledge.declared_accuracy is not None:
        accuracy = knowledge.declared_accuracy
        if not math.isfinite(accuracy) or not 0.0 <= accuracy <= 1.0:
            raise ValueError(f"declared_accuracy must lie in [0, 1], got {accuracy}")
        rule = rule_for_accuracy(accuracy)
        if rule is not None:
            return RuleChoice(
                rule,
                f"declared verifier accuracy {accuracy:.3f}: {_describe(rule)} is the dev-set choice at that accuracy",
                accuracy,
            )
        return RuleChoice(
            SAFEST,
            f"declared verifier accuracy {accuracy:.3f} is below the weakest verifier measured "
            f"({DECLARED[0][0]}); the safest rule",
            accuracy,
        )
    if knowledge.engine in BY_ENGINE:
        rule = BY_ENGINE[knowledge.engine]
        return RuleChoice(
            rule, f"the {knowledge.engine} engine: {_describe(rule)} is the dev-set choice for its zero-shot scores"
        )
    return RuleChoice(
        SAFEST,
        "nothing known about the verifier (no calibration set, no declared accuracy): "
        f"{_describe(SAFEST)}: strict is better with a strong verifier but collapses with a weak one",
    )


POSTERIOR_PARTITIONERS = ("mixture", "calibrated")


def configured_rule(partitioner: str, rho: float, rho_absent: float) -> RuleChoice:
    """The rule of a namespace that names its partitioner: that partitioner and `hard`, the
    paper's rule (only partitioner "auto" chooses)."""
    posterior = partitioner in POSTERIOR_PARTITIONERS
    rule = Rule(partitioner, "hard", rho if posterior else None, (rho_absent or rho) if posterior else None)
    return RuleChoice(
        rule,
        f"configured: partitioner {partitioner}, recall hard (the paper's rule); "
        "partitioner 'auto' would choose from what the namespace knows about its verifier",
    )


def knowledge_of(labelled: LabelledSet | None, declared_accuracy: float | None, engine: str) -> VerifierKnowledge:
    """VerifierKnowledge from a namespace's stored facts."""
    if labelled is None:
        return VerifierKnowledge(declared_accuracy=declared_accuracy, engine=engine)
    return VerifierKnowledge(
        labelled_accuracy=labelled.accuracy,
        labelled_present=labelled.present,
        labelled_absent=labelled.absent,
        declared_accuracy=declared_accuracy,
        engine=engine,
    )


# An explicit Recall.rank_by_confidence on a namespace whose rule carries no confidence ranking
# uses this: the flag the tuning half chose for the strongest verifier measured with a declared
# accuracy.
DEFAULT_CONFIDENCE = ConfidenceRanking(present_above=0.9)


def confidence_in_force(
    rule: Rule, runs_rule: bool, requested: bool | None, mode: str | None = None
) -> ConfidenceRanking:
    """The confidence ranking a recall uses: `requested` None follows the rule when the recall
    runs it (no mode named) and uses none when a mode is named; True uses the rule's ranking, or
    DEFAULT_CONFIDENCE where it has none; False none. Confidence orders items within tiers, so it
    needs hard, strict or adaptive (which applies it when it resolves to hard): ValueError for an
    explicit True with soft or off."""
    if requested is False or (requested is None and not runs_rule):
        return NO_CONFIDENCE
    effective_mode = rule.recall_mode if runs_rule else mode
    if requested and effective_mode in ("soft", "off"):
        raise ValueError(
            f"rank_by_confidence orders items within logic tiers; mode {effective_mode} ranks without "
            "tiers: use hard, strict or adaptive, or leave rank_by_confidence unset"
        )
    if rule.ranks_by_confidence:
        return rule.confidence
    return DEFAULT_CONFIDENCE if requested else NO_CONFIDENCE


def describe_confidence(ranking: ConfidenceRanking) -> str:
    parts = ([f"forbidden confidence < {ranking.absent_below}"] if ranking.absent_below is not None else []) + (
        [f"required confidence > {ranking.present_above}"] if ranking.present_above is not None else []
    )
    if ranking.present_weight > 0 or ranking.absent_weight > 0:
        parts.append(
            "similarity"
            + (f" + {ranking.present_weight:g} x required confidence" if ranking.present_weight else "")
            + (f" - {ranking.absent_weight:g} x forbidden confidence" if ranking.absent_weight else "")
        )
    return "ranked by confidence within tiers (" + ", then ".join(parts) + ")" if parts else ""


def _describe(rule: Rule) -> str:
    bands = ""
    if rule.rho is not None:
        bands = f" (rho {rule.rho}" + (f", rho_absent {rule.rho_absent}" if rule.rho_absent else "") + ")"
    confidence = ""
    if rule.ranks_by_confidence:
        confidence = " + " + describe_confidence(rule.confidence)
    return f"{rule.partitioner}{bands} + {rule.recall_mode}{confidence}"
