"""Partitioner "auto" over a real socket (issue 18): a namespace's partitioner and default recall
mode come from what it knows about its verifier (a labelled Calibrate set, a declared accuracy,
the engine), NamespaceInfo.rule says which and why, a Recall that names no mode runs that rule
and says so, and an explicit mode is obeyed. Bad input names the field and changes nothing."""

import math

import grpc
import numpy as np
import pytest

from polarmem.v1 import memory_service_pb2 as pb
from polarmem.v1 import memory_service_pb2_grpc as pb_grpc
from polarmem_server.api.server import PolarMemServer
from polarmem_server.domain import rule_choice
from servertools import DIM, TWO_TEMPLATES, make_config

SPACES = [pb.VectorSpaceConfig(name="vis", dim=DIM)]


def create(stub, name, **config):
    """A namespace of two templates: fill() sends two P(Yes) per concept."""
    config.setdefault("templates", list(TWO_TEMPLATES))
    return stub.CreateNamespace(
        pb.CreateNamespaceRequest(name=name, config=pb.NamespaceConfig(spaces=SPACES, encoder="none", **config))
    ).namespace


def update(stub, name, paths, **config):
    return stub.UpdateNamespace(
        pb.UpdateNamespaceRequest(name=name, config=pb.NamespaceConfig(**config), update_mask={"paths": paths})
    )


def rule_of(stub, name):
    return stub.GetNamespace(pb.GetNamespaceRequest(name=name)).namespace.rule


def fill(stub, name, seed=3, n=24):
    """Items whose dog / cat scores a verifier of accuracy ~0.9 would give, plus 20 other concepts."""
    rng = np.random.default_rng(seed)
    for i in range(n):
        present = {"dog": i % 2 == 0, "cat": i % 3 == 0}
        scores = {
            c: pb.ConceptScores(p_yes=[float(rng.beta(6, 1.5) if there else rng.beta(1.5, 6))] * 2)
            for c, there in present.items()
        }
        scores.update({f"k{j}": pb.ConceptScores(p_yes=[float(rng.beta(1.2, 6))] * 2) for j in range(20)})
        vector = pb.VectorValue(values=rng.standard_normal(DIM).astype(np.float32).tolist())
        stub.Remember(
            pb.RememberRequest(namespace=name, item=pb.ItemInput(id=f"i{i}", vectors={"vis": vector}, scores=scores))
        )


def recall(stub, name, mode=pb.RECALL_MODE_UNSPECIFIED):
    query = pb.VectorValue(values=np.ones(DIM, dtype=np.float32).tolist())
    return stub.Recall(
        pb.RecallRequest(
            namespace=name, vectors={"vis": query}, required=["dog"], forbidden=["cat"], top_k=8, mode=mode
        )
    )


def error_of(call):
    with pytest.raises(grpc.RpcError) as caught:
        call()
    return caught.value.code(), caught.value.details()


def test_declared_accuracy_0_9_chooses_otsu_strict_and_recall_runs_it(stub):
    info = create(stub, "declared", partitioner="auto", declared_accuracy=0.9)
    assert info.config.partitioner == "auto" and info.config.declared_accuracy == pytest.approx(0.9)
    assert (info.rule.partitioner, info.rule.recall_mode) == ("otsu", pb.RECALL_MODE_STRICT)
    assert "declared verifier accuracy 0.900" in info.rule.reason
    assert info.rule.HasField("accuracy_used") and info.rule.accuracy_used == pytest.approx(0.9)
    fill(stub, "declared")
    item = stub.GetItem(pb.GetItemRequest(namespace="declared", id="i0")).item
    assert item.partition.method == "otsu"

    default = recall(stub, "declared")
    assert default.mode_used == pb.RECALL_MODE_STRICT
    assert "namespace's rule" in default.mode_reason and "declared verifier accuracy 0.900" in default.mode_reason
    strict = recall(stub, "declared", pb.RECALL_MODE_STRICT)
    assert [h.id for h in default.hits] == [h.id for h in strict.hits]


def test_an_explicit_mode_overrides_the_rule(stub):
    create(stub, "explicit", partitioner="auto", declared_accuracy=0.95)
    fill(stub, "explicit")
    hard = recall(stub, "explicit", pb.RECALL_MODE_HARD)
    assert hard.mode_used == pb.RECALL_MODE_HARD and "namespace's rule" not in hard.mode_reason
    off = recall(stub, "explicit", pb.RECALL_MODE_OFF)
    assert off.mode_used == pb.RECALL_MODE_OFF
    assert recall(stub, "explicit").mode_used == pb.RECALL_MODE_STRICT


def test_knowing_nothing_is_otsu_hard_and_equals_the_papers_rule(stub):
    """ "auto" with no knowledge partitions and ranks exactly as an Otsu namespace in hard mode."""
    info = create(stub, "blind", partitioner="auto")
    assert (info.rule.partitioner, info.rule.recall_mode) == ("otsu", pb.RECALL_MODE_HARD)
    assert "nothing known" in info.rule.reason and not info.rule.HasField("accuracy_used")
    create(stub, "paper")  # the default partitioner: otsu, configured
    for name in ("blind", "paper"):
        fill(stub, name)
    paper_rule = rule_of(stub, "paper")
    assert (paper_rule.partitioner, paper_rule.recall_mode) == ("otsu", pb.RECALL_MODE_HARD)
    assert paper_rule.reason.startswith("configured")
    for i in range(24):
        blind = stub.GetItem(pb.GetItemRequest(namespace="blind", id=f"i{i}")).item
        paper = stub.GetItem(pb.GetItemRequest(namespace="paper", id=f"i{i}")).item
        assert (list(blind.has), list(blind.not_has), blind.partition.tau) == (
            list(paper.has),
            list(paper.not_has),
            paper.partition.tau,
        )
    blind_hits, paper_hits = recall(stub, "blind"), recall(stub, "paper")
    assert blind_hits.mode_used == paper_hits.mode_used == pb.RECALL_MODE_HARD
    assert [(h.id, h.s_log, h.s_sem) for h in blind_hits.hits] == [(h.id, h.s_log, h.s_sem) for h in paper_hits.hits]
    assert "configured" in paper_hits.mode_reason  # the default is said even when it is the paper's rule


def test_calibrate_rechooses_and_repartitions_and_the_choice_survives_a_restart(tmp_path):
    server = PolarMemServer(make_config(tmp_path)).start()
    try:
        with grpc.insecure_channel(server.address) as channel:
            stub = pb_grpc.MemoryServiceStub(channel)
            create(stub, "cal", partitioner="auto", declared_accuracy=0.9)
            fill(stub, "cal")
            before = stub.GetItem(pb.GetItemRequest(namespace="cal", id="i0")).item
            assert before.partition.method == "otsu" and before.version == 1
            # a verifier a person checked on 60 + 60 objects, right on every one
            rng = np.random.default_rng(7)
            p_yes = np.concatenate([rng.uniform(0.8, 1.0, 60), rng.uniform(0.0, 0.2, 60)]).tolist()
            stub.Calibrate(pb.CalibrateRequest(namespace="cal", p_yes=p_yes, present=[True] * 60 + [False] * 60))
            rule = rule_of(stub, "cal")
            assert (rule.partitioner, rule.recall_mode) == ("calibrated", pb.RECALL_MODE_STRICT)
            assert "labelled calibration set" in rule.reason and "60 present / 60 absent" in rule.reason
            assert rule.accuracy_used > 0.95
            after = stub.GetItem(pb.GetItemRequest(namespace="cal", id="i0")).item
            assert after.partition.method == "calibrated" and after.version == 2  # re-partitioned from kept scores
            assert after.partition.parameters["rho"] == pytest.approx(0.5)
            assert after.partition.parameters["rho_absent"] == pytest.approx(0.99)
            assert [e.p_yes for e in after.evidence] == [e.p_yes for e in before.evidence]  # no re-scoring
            assert recall(stub, "cal").mode_used == pb.RECALL_MODE_STRICT
    finally:
        server.stop()
    server = PolarMemServer(make_config(tmp_path)).start()
    try:
        with grpc.insecure_channel(server.address) as channel:
            stub = pb_grpc.MemoryServiceStub(channel)
            again = rule_of(stub, "cal")
            assert (again.partitioner, again.reason) == (rule.partitioner, rule.reason)
            assert stub.GetItem(pb.GetItemRequest(namespace="cal", id="i5")).item.partition.method == "calibrated"
    finally:
        server.stop()


def test_a_small_labelled_set_leaves_the_declared_rule(stub):
    create(stub, "small", partitioner="auto", declared_accuracy=0.9)
    stub.Calibrate(
        pb.CalibrateRequest(namespace="small", p_yes=[0.9, 0.8, 0.1, 0.2], present=[True, True, False, False])
    )
    rule = rule_of(stub, "small")
    assert (rule.partitioner, rule.recall_mode) == ("otsu", pb.RECALL_MODE_STRICT) and "declared" in rule.reason


def test_update_namespace_rechooses(stub):
    create(stub, "upd", partitioner="auto")
    fill(stub, "upd")
    response = update(stub, "upd", ["declared_accuracy"], declared_accuracy=0.95)
    assert response.namespace.rule.recall_mode == pb.RECALL_MODE_STRICT
    assert "0.950" in response.namespace.rule.reason
    assert recall(stub, "upd").mode_used == pb.RECALL_MODE_STRICT
    cleared = update(stub, "upd", ["declared_accuracy"])  # in the mask, unset: forget it
    assert not cleared.namespace.config.HasField("declared_accuracy")
    assert cleared.namespace.rule.recall_mode == pb.RECALL_MODE_HARD
    # a configured partitioner takes over from "auto": its rule is the configured one, hard
    configured = update(
        stub, "upd", ["partitioner", "declared_accuracy"], partitioner="mixture", declared_accuracy=0.95
    )
    assert configured.namespace.rule.partitioner == "mixture"
    assert configured.namespace.rule.recall_mode == pb.RECALL_MODE_HARD
    assert configured.namespace.rule.reason.startswith("configured")
    assert configured.items_repartitioned == 24
    assert stub.GetItem(pb.GetItemRequest(namespace="upd", id="i0")).item.partition.method == "mixture"
    # and back to "auto": the mixture's band does not carry over, the declared accuracy does
    back = update(stub, "upd", ["partitioner"], partitioner="auto")
    assert (back.namespace.rule.partitioner, back.namespace.rule.recall_mode) == ("otsu", pb.RECALL_MODE_STRICT)
    assert stub.GetItem(pb.GetItemRequest(namespace="upd", id="i0")).item.partition.method == "otsu"


@pytest.mark.parametrize("bad", [1.5, -0.1, float("nan"), float("inf")])
def test_a_bad_declared_accuracy_names_the_field_and_changes_nothing(stub, bad):
    code, details = error_of(lambda: create(stub, "bad", partitioner="auto", declared_accuracy=bad))
    assert code == grpc.StatusCode.INVALID_ARGUMENT and "config.declared_accuracy" in details
    assert error_of(lambda: rule_of(stub, "bad"))[0] == grpc.StatusCode.NOT_FOUND
    create(stub, "good", partitioner="auto", declared_accuracy=0.8)
    code, details = error_of(lambda: update(stub, "good", ["declared_accuracy"], declared_accuracy=bad))
    assert code == grpc.StatusCode.INVALID_ARGUMENT and "config.declared_accuracy" in details
    info = stub.GetNamespace(pb.GetNamespaceRequest(name="good")).namespace
    assert info.config.declared_accuracy == pytest.approx(0.8) and info.rule.accuracy_used == pytest.approx(0.8)
    assert not math.isnan(info.rule.accuracy_used)


def test_auto_with_a_band_is_refused(stub):
    code, details = error_of(lambda: create(stub, "band", partitioner="auto", rho=0.6))
    assert code == grpc.StatusCode.INVALID_ARGUMENT and "config.rho" in details and "auto" in details
    create(stub, "band", partitioner="auto")
    code, details = error_of(lambda: update(stub, "band", ["rho_absent"], rho_absent=0.93))
    assert code == grpc.StatusCode.INVALID_ARGUMENT and "rho_absent" in details
    code, details = error_of(lambda: create(stub, "typo", partitioner="automatic"))
    assert code == grpc.StatusCode.INVALID_ARGUMENT and "config.partitioner" in details and "auto" in details


def test_the_rule_table_is_what_the_server_reports(stub):
    """Every declared accuracy the dev set measured gets the table's rule through the server."""
    for i, (accuracy, rule) in enumerate(rule_choice.DECLARED):
        info = create(stub, f"table{i}", partitioner="auto", declared_accuracy=accuracy)
        assert info.rule.partitioner == rule.partitioner
        assert info.rule.recall_mode == {"hard": pb.RECALL_MODE_HARD, "strict": pb.RECALL_MODE_STRICT}[rule.recall_mode]
