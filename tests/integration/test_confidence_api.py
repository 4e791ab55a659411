"""Confidence within tiers over a real socket: RuleChoice says when a namespace's rule ranks by
confidence, a Recall without a mode runs it (and says so in mode_reason), RecallRequest
.rank_by_confidence turns it on or off explicitly, and asking for it with a tierless mode is
INVALID_ARGUMENT naming the field."""

import grpc
import numpy as np
import pytest

from polarmem.v1 import memory_service_pb2 as pb
from servertools import DIM, TWO_TEMPLATES

SPACES = [pb.VectorSpaceConfig(name="vis", dim=DIM)]


def create(stub, name, **config):
    return stub.CreateNamespace(
        pb.CreateNamespaceRequest(
            name=name, config=pb.NamespaceConfig(spaces=SPACES, encoder="none", templates=list(TWO_TEMPLATES), **config)
        )
    ).namespace


def fill(stub, name, n=40):
    rng = np.random.default_rng(4)
    for i in range(n):
        scores = {
            c: pb.ConceptScores(p_yes=[float(p)] * 2)
            for c, p in (
                ("dog", rng.choice([0.995, 0.93, 0.4, 0.02])),
                ("cat", rng.choice([0.97, 0.3, 0.05, 0.005])),
                *((f"k{j}", rng.uniform(0, 0.2)) for j in range(8)),
            )
        }
        stub.Remember(
            pb.RememberRequest(
                namespace=name,
                item=pb.ItemInput(
                    id=f"i{i}", vectors={"vis": pb.VectorValue(values=rng.standard_normal(DIM).tolist())}, scores=scores
                ),
            )
        )


def recall(stub, name, mode=pb.RECALL_MODE_UNSPECIFIED, confidence=None):
    request = pb.RecallRequest(
        namespace=name,
        vectors={"vis": pb.VectorValue(values=[1.0] * DIM)},
        required=["dog"],
        forbidden=["cat"],
        top_k=40,
        mode=mode,
    )
    if confidence is not None:
        request.rank_by_confidence = confidence
    return stub.Recall(request)


def test_rule_choice_reports_confidence_and_recall_runs_it(stub):
    info = create(stub, "strong", partitioner="auto", declared_accuracy=0.95)
    assert info.rule.recall_mode == pb.RECALL_MODE_STRICT
    assert info.rule.HasField("confidence_present_above") and info.rule.confidence_present_above == pytest.approx(0.9)
    assert not info.rule.HasField("confidence_absent_below")
    assert info.rule.confidence_present_weight == pytest.approx(0.4)
    assert info.rule.confidence_absent_weight == pytest.approx(0.8)
    assert "ranked by confidence within tiers" in info.rule.reason
    weak = create(stub, "weak", partitioner="auto", declared_accuracy=0.7)
    assert not weak.rule.HasField("confidence_present_above") and not weak.rule.HasField("confidence_absent_below")
    assert weak.rule.confidence_absent_weight == pytest.approx(0.4)
    unknown = create(stub, "unknown", partitioner="auto")  # knowing nothing: the paper's rule, no confidence
    assert not any(
        unknown.rule.HasField(f)
        for f in (
            "confidence_present_above",
            "confidence_absent_below",
            "confidence_present_weight",
            "confidence_absent_weight",
        )
    )

    fill(stub, "strong")
    by_rule = recall(stub, "strong")
    assert by_rule.mode_used == pb.RECALL_MODE_STRICT
    applied = (
        "; ranked by confidence within tiers (required confidence > 0.9, then similarity + 0.4 x required "
        "confidence - 0.8 x forbidden confidence)"
    )
    assert by_rule.mode_reason.endswith(applied)
    without = recall(stub, "strong", confidence=False)
    assert not without.mode_reason.endswith(applied)
    named = recall(stub, "strong", mode=pb.RECALL_MODE_STRICT)  # a named mode: as specified, no confidence
    assert [h.id for h in named.hits] == [h.id for h in without.hits]
    assert [h.id for h in by_rule.hits] != [h.id for h in without.hits]
    assert sorted(h.id for h in by_rule.hits) == sorted(h.id for h in without.hits)
    on = recall(stub, "strong", mode=pb.RECALL_MODE_STRICT, confidence=True)  # explicit: the rule's thresholds
    assert [h.id for h in on.hits] == [h.id for h in by_rule.hits]


@pytest.mark.parametrize("mode", [pb.RECALL_MODE_OFF, pb.RECALL_MODE_SOFT])
def test_rank_by_confidence_with_a_tierless_mode_is_invalid(stub, mode):
    create(stub, "n")
    fill(stub, "n", n=5)
    with pytest.raises(grpc.RpcError) as caught:
        recall(stub, "n", mode=mode, confidence=True)
    assert caught.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    assert "rank_by_confidence" in caught.value.details()
    assert recall(stub, "n", mode=pb.RECALL_MODE_HARD).hits  # nothing changed


def test_every_mode_that_keeps_tiers_takes_the_rules_ranking_when_asked(stub):
    """On the strict rule's namespace (declared accuracy 0.95: confidence flags and weights),
    rank_by_confidence true with hard ranks by the rule's confidence, soft with it false is
    accepted and unranked, and adaptive ranks its hard choice, never its soft one."""
    create(stub, "strong", partitioner="auto", declared_accuracy=0.95)
    fill(stub, "strong")
    ranked_words = "ranked by confidence within tiers (required confidence > 0.9"
    hard = recall(stub, "strong", mode=pb.RECALL_MODE_HARD, confidence=True)
    plain = recall(stub, "strong", mode=pb.RECALL_MODE_HARD)
    assert hard.mode_used == pb.RECALL_MODE_HARD and ranked_words in hard.mode_reason
    assert ranked_words not in plain.mode_reason and [h.id for h in hard.hits] != [h.id for h in plain.hits]
    soft = recall(stub, "strong", mode=pb.RECALL_MODE_SOFT, confidence=False)
    assert soft.mode_used == pb.RECALL_MODE_SOFT and "confidence" not in soft.mode_reason and soft.hits

    def adaptive(required, k):
        request = pb.RecallRequest(
            namespace="strong",
            vectors={"vis": pb.VectorValue(values=[1.0] * DIM)},
            required=required,
            top_k=k,
            mode=pb.RECALL_MODE_ADAPTIVE,
            rank_by_confidence=True,
        )
        return stub.Recall(request)

    chose_hard = adaptive(["dog"], 3)  # certain constraints, the top 3 close to the best
    assert chose_hard.mode_used == pb.RECALL_MODE_HARD and ranked_words in chose_hard.mode_reason
    chose_soft = adaptive(["dog", "cat"], 40)  # too few items hold both
    assert chose_soft.mode_used == pb.RECALL_MODE_SOFT and "confidence" not in chose_soft.mode_reason
