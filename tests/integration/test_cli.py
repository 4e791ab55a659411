"""The `polarmem` command line against a real server: remember (per-line errors, resume),
recall (strict mode included) and calibrate (a bad file line, a refused calibration set)."""

import json

import numpy as np

from polarmem_server.faces.cli import main
from servertools import DIM


def vec(seed):
    return np.random.default_rng(seed).standard_normal(DIM).round(4).tolist()


def test_remember_then_recall(server, ns, tmp_path, capsys):
    lines = [json.dumps({"id": f"i{i}", "vectors": {"vis": vec(i)},
                         "states": {"dog": "has", "cat": "not_has" if i % 2 else "uncertain"}}) for i in range(6)]
    lines.insert(3, "{not json")
    data = tmp_path / "items.jsonl"
    data.write_text("\n".join(lines))
    code = main(["remember", str(data), "-n", ns, "--address", server.address, "--batch", "4"])
    out, err = capsys.readouterr()
    assert code == 1 and "line 4:" in err and "6 items stored or already present, 1 failed" in out
    assert not (tmp_path / "items.jsonl.polarmem-progress").exists()
    # a rerun finds the six stored (ALREADY_EXISTS counts as done) and reports the bad line again
    assert main(["remember", str(data), "-n", ns, "--address", server.address]) == 1
    assert "6 items stored or already present, 1 failed" in capsys.readouterr().out

    assert main(["recall", "a dog but no cat", "-n", ns, "--address", server.address, "--mode", "strict", "-k", "3"]) == 0
    out = capsys.readouterr().out
    assert "required=['dog'] forbidden=['cat']" in out and "mode=strict->strict" in out
    assert "tiers: 6 entailed, 0 neutral, 0 conflicting" in out


def test_calibrate(server, client, tmp_path, capsys):
    client.create_namespace("cal", spaces=[("vis", DIM)], encoder="none", partitioner="calibrated")
    good = tmp_path / "labels.jsonl"
    good.write_text("\n".join(json.dumps({"p_yes": p, "present": p > 0.5}) for p in (0.9, 0.8, 0.7, 0.2, 0.1, 0.05)))
    assert main(["calibrate", str(good), "-n", "cal", "--address", server.address]) == 0
    assert "calibrated 'cal' on 6 labelled scores" in capsys.readouterr().out
    assert client.get_namespace("cal").calibration.supervised

    bad_line = tmp_path / "bad.jsonl"
    bad_line.write_text('{"p_yes": 0.9, "present": true}\n{"p_yes": 0.2, "present": "no"}\n')
    assert main(["calibrate", str(bad_line), "-n", "cal", "--address", server.address]) == 2
    assert "line 2" in capsys.readouterr().err

    one_class = tmp_path / "one_class.jsonl"
    one_class.write_text("\n".join(json.dumps({"p_yes": p, "present": True}) for p in (0.9, 0.8, 0.7)))
    assert main(["calibrate", str(one_class), "-n", "cal", "--address", server.address]) == 2
    assert "INVALID_ARGUMENT" in capsys.readouterr().err
