"""The `polarmem` command line against a real server: every client command, the strict
JSONL line schema, connection settings from flags / environment / config file, and the
mistakes a new user makes getting clear errors."""

import importlib.util
import json
import subprocess
import sys

import numpy as np
import pytest

from polarmem_server.api import service as service_module
from polarmem_server.api.config import load_config
from polarmem_server.api.server import PolarMemServer
from polarmem_server.faces import cli
from polarmem_server.faces.client_requests import KIND_NAMES
from polarmem_server.faces.cli import commands, main
from polarmem.v1 import memory_service_pb2 as client_pb
from servertools import DIM, make_config, self_signed_certificate


def vec(seed):
    return np.random.default_rng(seed).standard_normal(DIM).round(4).tolist()


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch, tmp_path):
    """No POLARMEM_* from the caller's shell and no ~/.config of theirs."""
    for name in (
        "ADDRESS",
        "TOKEN",
        "TOKEN_FILE",
        "TLS",
        "TLS_CA",
        "TLS_SERVER_NAME",
        "TIMEOUT_S",
        "NAMESPACE",
        "CONFIG",
    ):
        monkeypatch.delenv(f"POLARMEM_{name}", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))


@pytest.fixture
def lexical(tmp_path):
    server = PolarMemServer(make_config(tmp_path, engine="lexical", engine_max_delay_ms=1.0)).start()
    yield server
    server.stop()


def run(capsys, *argv):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_remember_then_recall(server, ns, tmp_path, capsys):
    lines = [
        json.dumps(
            {
                "id": f"i{i}",
                "vectors": {"vis": vec(i)},
                "states": {"dog": "has", "cat": "not_has" if i % 2 else "uncertain"},
            }
        )
        for i in range(6)
    ]
    lines.insert(3, "{not json")
    data = tmp_path / "items.jsonl"
    data.write_text("\n".join(lines))
    code, out, err = run(capsys, "remember", data, "-n", ns, "--address", server.address, "--batch", 4)
    assert code == 1 and f"{data}:4: not JSON" in err and "6 stored, 0 already present, 1 failed" in out
    assert not (tmp_path / "items.jsonl.polarmem-progress").exists()
    # a rerun finds the six stored (ALREADY_EXISTS counts as done) and reports the bad line again
    code, out, _ = run(capsys, "remember", data, "-n", ns, "--address", server.address)
    assert code == 1 and "0 stored, 6 already present, 1 failed" in out

    code, out, _ = run(
        capsys, "recall", "a dog but no cat", "-n", ns, "--address", server.address, "--mode", "strict", "-k", 3
    )
    assert code == 0
    assert "required=['dog'] forbidden=['cat']" in out and "mode=strict->strict" in out
    assert "tiers: 6 entailed, 0 neutral, 0 conflicting" in out
    code, out, _ = run(
        capsys, "recall", "a dog but no cat", "-n", ns, "--address", server.address, "--json", "--context", "-k", 2
    )
    body = json.loads(out)
    assert code == 0 and len(body["hits"]) == 2 and body["context"].startswith("[1] [Fact Check: VERIFIED]")


def test_resume_continues_after_the_checkpoint(server, client, ns, tmp_path, capsys):
    data = tmp_path / "items.jsonl"
    data.write_text("\n".join(json.dumps({"id": f"i{i}", "vectors": {"vis": vec(i)}}) for i in range(5)))
    (tmp_path / "items.jsonl.polarmem-progress").write_text("3")  # an earlier run stopped after line 3
    code, out, _ = run(capsys, "remember", data, "-n", ns, "--address", server.address, "--resume")
    assert code == 0 and "2 stored" in out
    assert client.get_namespace(ns).item_count == 2


def test_strict_line_schema(server, client, ns, tmp_path, capsys):
    client.remember(ns, id="keep", vectors={"vis": vec(0)})
    data = tmp_path / "items.jsonl"
    data.write_text(
        "\n".join(
            [
                json.dumps({"id": "ok", "vectors": {"vis": vec(1)}, "text": "fine"}),
                json.dumps({"id": "typo", "vectors": {"vis": vec(2)}, "txt": "oops"}),
                json.dumps({"vectors": {"vis": vec(3)}}),
                json.dumps({"id": "one-score", "vectors": {"vis": vec(4)}, "scores": {"dog": [0.9]}}),
                json.dumps({"id": "kind", "vectors": {"vis": vec(5)}, "kind": "photo"}),
                json.dumps({"id": "meta", "vectors": {"vis": vec(6)}, "metadata": "room"}),
                json.dumps(["not", "an", "object"]),
                json.dumps({"id": "dim", "vectors": {"vis": [1.0, 2.0]}}),
            ]
        )
    )
    code, out, err = run(capsys, "remember", data, "-n", ns, "--address", server.address)
    assert code == 1 and "1 stored, 0 already present, 7 failed" in out
    assert f"{data}:2: unknown key 'txt' (did you mean 'text'?)" in err
    assert f"{data}:3: missing \"id\"" in err
    assert f"{data}:4: scores['dog']: 1 P(Yes) score, but the namespace has 4 templates" in err
    assert f"{data}:5: kind must be one of visual, text, got 'photo'" in err
    assert f"{data}:6: metadata must be an object" in err
    assert f"{data}:7: a line must be a JSON object" in err
    assert f"{data}:8: dim: vectors['vis']: expected dimension {DIM}" in err
    assert sorted(n for n in ["keep", "ok"]) == ["keep", "ok"] and client.get_namespace(ns).item_count == 2

    code, out, _ = run(capsys, "remember", data, "-n", ns, "--address", server.address, "--json")
    report = json.loads(out)
    assert code == 1 and report["already_present"] == 1 and [e["line"] for e in report["errors"]] == list(range(2, 9))


def test_a_line_that_is_not_utf8_is_reported_with_its_number(server, client, ns, tmp_path, capsys):
    """Before: one bare "'utf-8' codec can't decode byte 0xe9" for the whole file, no file, no
    line, and nothing after it read."""
    data = tmp_path / "items.jsonl"
    good = [json.dumps({"id": f"ok{i}", "vectors": {"vis": vec(i)}, "text": "fine"}).encode() for i in range(2)]
    data.write_bytes(good[0] + b"\n" + b'{"id": "caf\xe9", "text": "latin-1"}\n' + good[1] + b"\n")
    code, out, err = run(capsys, "remember", data, "-n", ns, "--address", server.address)
    assert code == 1 and "2 stored, 0 already present, 1 failed" in out, out
    assert f"{data}:2: not UTF-8 text (byte 12 of the line: invalid continuation byte); save the file as UTF-8" in err
    assert client.get_namespace(ns).item_count == 2


def test_remember_from_stdin_with_verification_and_content(lexical, tmp_path, capsys, monkeypatch):
    import io

    lexical_client_cmd = ["--address", lexical.address]
    assert (
        run(capsys, "namespace", "create", "v", "--space", f"vis:{DIM}", "--encoder", "none", *lexical_client_cmd)[0]
        == 0
    )
    image = tmp_path / "img.png"
    image.write_bytes(b"\x89PNG not really")
    lines = [
        json.dumps(
            {
                "id": "t1",
                "kind": "text",
                "text": "a dog in the park, no cat",
                "vectors": {"vis": vec(1)},
                "verify_concepts": ["dog", "cat"],
            }
        ),
        json.dumps({"id": "p1", "vectors": {"vis": vec(2)}, "content": "img.png", "verify_concepts": ["dog"]}),
        json.dumps({"id": "p2", "vectors": {"vis": vec(3)}, "content": "missing.png", "verify_concepts": ["dog"]}),
    ]
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr("sys.stdin", io.StringIO("\n".join(lines) + "\n"))
    code, out, err = run(capsys, "remember", "-n", "v", *lexical_client_cmd)
    assert code == 1 and "1 stored, 0 already present, 2 failed" in out
    # the image bytes reached the server (the text-only engine refuses them); a missing file never left
    assert "<stdin>:2: p1: content: engine 'lexical' reads text only" in err
    assert "<stdin>:3: content: cannot read image file" in err

    code, out, _ = run(capsys, "get", "t1", "-n", "v", *lexical_client_cmd, "--json")
    item = json.loads(out)["item"]
    # verified dog and cat, and (an open vocabulary, the CLI's default) the note's own word "park"
    assert code == 0 and item["has"] == ["dog", "park"] and item["not_has"] == ["cat"]

    # one item from flags
    code, out, _ = run(
        capsys,
        "remember",
        "-n",
        "v",
        "--id",
        "f1",
        "--kind",
        "text",
        "--text",
        "no dog here",
        "--verify",
        "dog",
        "--vectors-json",
        json.dumps({"vis": vec(4)}),
        *lexical_client_cmd,
    )
    assert code == 0 and "NOT_HAS    dog" in out


def test_item_commands(lexical, tmp_path, capsys):
    conn = ["--address", lexical.address, "-n", "v"]
    run(capsys, "namespace", "create", "v", "--space", f"vis:{DIM}", "--encoder", "none", "--address", lexical.address)
    for i, text in enumerate(["a dog on a sofa, no cat", "a cat on a sofa, no dog"]):
        assert (
            run(
                capsys,
                "remember",
                *conn,
                "--id",
                f"i{i}",
                "--kind",
                "text",
                "--text",
                text,
                "--verify",
                "dog,cat",
                "--vectors-json",
                json.dumps({"vis": vec(i)}),
            )[0]
            == 0
        )

    code, out, _ = run(capsys, "observe", "i0", *conn, "--state", "bus=not_has", "--json")
    assert code == 0 and "bus" in json.loads(out)["item"]["not_has"]
    code, out, _ = run(capsys, "observe", "i0", *conn, "--score", "car=0.9,0.9,0.9")
    assert code == 2  # three scores, four templates: refused before the call
    code, out, _ = run(capsys, "observe", "i1", *conn, "--text", "a cat and a dog on a sofa", "--verify", "dog")
    assert code == 0 and "observed 'i1'" in out

    code, out, _ = run(capsys, "get", "i0", *conn, "--history")
    assert code == 0 and "concept" in out and "bus" in out and "v1:" in out

    from polarmem_server.faces.client import PolarMemClient

    with PolarMemClient(lexical.address) as client:
        expected = list(client.get_concept("v", "dog", polarity="not_has").item_ids) + list(
            client.get_concept("v", "cat", polarity="not_has").item_ids
        )
    code, out, _ = run(capsys, "concept", "dog", *conn, "--polarity", "not_has", "--page-size", 1, "--all", "--json")
    dog = json.loads(out)["item_ids"]
    code_cat, out, _ = run(
        capsys, "concept", "cat", *conn, "--polarity", "not_has", "--page-size", 1, "--all", "--json"
    )
    assert code == code_cat == 0 and dog + json.loads(out)["item_ids"] == expected and len(expected) >= 2
    code, out, _ = run(capsys, "concept", "cat", *conn, "--polarity", "has")
    assert code == 0 and "HAS: i1" in out

    code, out, _ = run(capsys, "score", *conn, "--text", "a dog, no bus", "--concepts", "dog,bus")
    assert code == 0 and "engine lexical" in out and "dog" in out and "bus" in out

    code, out, _ = run(capsys, "forget", "i0", *conn)
    assert code == 0 and "forgot 'i0'" in out
    code, _, err = run(capsys, "forget", "i0", *conn)
    assert code == 2 and "NOT_FOUND" in err


def test_namespace_commands(server, capsys):
    conn = ["--address", server.address]
    code, _, err = run(capsys, "remember", "-n", "coco", "--id", "a", "--text", "x", *conn)
    assert code == 2 and "NOT_FOUND" in err and "polarmem namespace create" in err

    code, out, _ = run(
        capsys,
        "namespace",
        "create",
        "coco",
        "--space",
        "vis:8",
        "--space",
        "loc:4:multi",
        "--space",
        "small:4:int8",
        "--encoder",
        "none",
        "--kappa",
        0.7,
        "--partitioner",
        "calibrated",
        "--rho",
        0.9,
        "--alias",
        "puppy=dog",
        "--template",
        "Is there a {c}?",
        "--template",
        "A {c}?",
        *conn,
    )
    assert code == 0 and "created namespace 'coco'" in out
    code, out, _ = run(capsys, "namespace", "get", "coco", "--json", *conn)
    info = json.loads(out)
    assert info["config"]["kappa"] == 0.7 and info["config"]["aliases"] == {"puppy": "dog"}
    assert [s["name"] for s in info["config"]["spaces"]] == ["vis", "loc", "small"] and len(
        info["config"]["templates"]
    ) == 2
    code, out, _ = run(capsys, "namespace", "list", *conn)
    assert code == 0 and "coco" in out and "vis:8,loc:4,small:4" in out
    code, out, _ = run(
        capsys,
        "namespace",
        "create",
        "declared",
        "--encoder",
        "none",
        "--concept",
        "dog,cat",
        "--concept",
        "traffic light",
        "--json",
        *conn,
    )
    assert code == 0 and json.loads(out)["config"]["concepts"] == ["dog", "cat", "traffic light"]
    code, out, _ = run(capsys, "namespace", "get", "declared", *conn)
    assert "declared concepts  dog, cat, traffic light" in out and "concepts           3" in out
    assert run(capsys, "namespace", "delete", "declared", "--yes", *conn)[0] == 0
    code, out, err = run(capsys, "namespace", "create", "coco", *conn)
    assert code == 2 and "ALREADY_EXISTS" in err

    code, _, err = run(capsys, "namespace", "delete", "coco", *conn)
    assert code == 2 and "--yes" in err
    assert run(capsys, "namespace", "delete", "coco", "--yes", *conn)[0] == 0
    code, out, _ = run(capsys, "namespace", "list", "--json", *conn)
    assert json.loads(out) == []


@pytest.mark.skipif(
    "UpdateNamespace" not in vars(service_module.MemoryService),
    reason="the servicer does not implement UpdateNamespace yet (architecture helper's branch)",
)
def test_namespace_update(server, client, capsys):
    client.create_namespace("u", spaces=[("vis", DIM)], encoder="none")
    client.remember(
        "u", id="a", vectors={"vis": vec(0)}, scores={"dog": [0.9] * 4, "cat": [0.3] * 4, "car": [0.05] * 4}
    )
    code, out, _ = run(capsys, "namespace", "update", "u", "--kappa", 3, "--address", server.address)
    assert code == 0 and "1 items re-partitioned" in out
    assert client.get_namespace("u").config.kappa == 3.0
    code, _, err = run(capsys, "namespace", "update", "u", "--address", server.address)
    assert code == 2 and "nothing to change" in err


def test_recall_mistakes_get_clear_errors(server, client, ns, capsys):
    client.remember(ns, id="a", vectors={"vis": vec(0)}, states={"dog": "has"})
    conn = ["-n", ns, "--address", server.address]
    code, out, err = run(capsys, "recall", "--required", "dgo", "--vectors-json", json.dumps({"vis": vec(0)}), *conn)
    assert code == 2 and out == ""
    assert "INVALID_ARGUMENT: required: 'dgo' (did you mean 'dog'?) is not in the vocabulary of namespace" in err
    assert "hint: pass --allow-unknown-concepts" in err
    code, out, _ = run(
        capsys,
        "recall",
        "--required",
        "dog",
        "--forbidden",
        "dgo",
        "--allow-unknown-concepts",
        "--vectors-json",
        json.dumps({"vis": vec(0)}),
        *conn,
    )
    assert code == 0 and "unknown=['dgo']" in out and "skipped unknown concept 'dgo' (did you mean 'dog'?)" in out
    with pytest.raises(SystemExit):
        main(["recall", "x", "--mode", "fuzzy", *conn])
    assert "invalid choice: 'fuzzy'" in capsys.readouterr().err
    code, _, err = run(capsys, "recall", "a dog", "--address", server.address)
    assert code == 2 and "no namespace" in err and "POLARMEM_NAMESPACE" in err


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


def test_connection_from_environment_and_config_file(tmp_path, capsys, monkeypatch):
    tokens = tmp_path / "tokens.toml"
    tokens.write_text('[tokens]\nadmin = { token = "s3cret", namespaces = ["*"], role = "admin" }\n')
    with PolarMemServer(make_config(tmp_path, tokens_file=str(tokens))) as server:
        code, _, err = run(capsys, "namespace", "list", "--address", server.address)
        assert code == 2 and "UNAUTHENTICATED" in err and "POLARMEM_TOKEN" in err

        monkeypatch.setenv("POLARMEM_ADDRESS", server.address)
        monkeypatch.setenv("POLARMEM_TOKEN", "s3cret")
        assert run(capsys, "namespace", "create", "env", "--encoder", "none")[0] == 0

        token_file = tmp_path / "token"
        token_file.write_text("s3cret\n")
        config = tmp_path / "polarmem.toml"
        config.write_text(
            f'[server]\nmetrics_port = -1\n\n[client]\naddress = "{server.address}"\n'
            f'token_file = "{token_file}"\nnamespace = "env"\n'
        )
        monkeypatch.delenv("POLARMEM_ADDRESS")
        monkeypatch.delenv("POLARMEM_TOKEN")
        code, out, _ = run(capsys, "namespace", "list", "--config", config)
        assert code == 0 and "env" in out
        monkeypatch.setenv("POLARMEM_CONFIG", str(config))
        code, out, _ = run(capsys, "remember", "--id", "a", "--kind", "text", "--text", "hello")  # -n from the file
        assert code == 0 and "hello" in out
        monkeypatch.setenv("POLARMEM_ADDRESS", "127.0.0.1:9")  # the environment beats the file ...
        code, _, err = run(capsys, "namespace", "list", "--timeout", 2)
        assert code == 2 and "UNAVAILABLE" in err
        code, out, _ = run(capsys, "namespace", "list", "--address", server.address)  # ... and flags beat both
        assert code == 0 and "env" in out

        config.write_text('[client]\nadress = "x"\n')
        code, _, err = run(capsys, "namespace", "list")
        assert code == 2 and "unknown [client] setting 'adress' (did you mean 'address'?)" in err


def test_tls_from_the_command_line(tmp_path, capsys):
    cert, key = self_signed_certificate(tmp_path, "memory.test", "DNS:memory.test")
    with PolarMemServer(make_config(tmp_path, tls_cert=str(cert), tls_key=str(key))) as server:
        code, out, _ = run(
            capsys,
            "namespace",
            "create",
            "t",
            "--encoder",
            "none",
            "--address",
            server.address,
            "--tls-ca",
            cert,
            "--tls-server-name",
            "memory.test",
        )
        assert code == 0 and "created namespace 't'" in out
        code, _, err = run(capsys, "namespace", "list", "--address", server.address, "--timeout", 3)
        assert code == 2  # plaintext to a TLS server


def test_evaluate_names_its_missing_extra_before_running(tmp_path, capsys, monkeypatch):
    monkeypatch.setitem(cli.EVALUATE_NEEDS, "polarmem_no_such_plot_library", "eval")
    code, out, err = run(capsys, "evaluate", "--out", tmp_path / "eval")
    assert code == 2 and "needs the [eval] extra" in err and "polarmem_no_such_plot_library" in err
    assert "pip install 'polarmem-server[eval]'" in err and not (tmp_path / "eval").exists()


def test_repair_is_wired(tmp_path, capsys):
    if importlib.util.find_spec("polarmem_server.storage.local.repair") is None:
        code, _, err = run(capsys, "repair", tmp_path)
        assert code == 2 and "polarmem repair is unavailable" in err
    else:
        code, _, err = run(capsys, "repair", tmp_path / "no-such-dir")
        assert "unavailable" not in err


def test_serve_and_client_commands_share_one_config_file(tmp_path, capsys):
    """`polarmem serve` reads the server's settings and leaves the [client] table to the client
    commands, whether the server's settings sit at the top level or in [server]."""
    config = tmp_path / "polarmem.toml"
    server_part = f'address = "127.0.0.1:0"\ndata_dir = "{tmp_path / "data"}"\nmetrics_port = -1\n'
    config.write_text(server_part + '\n[client]\nnamespace = "shared"\ntimeout_s = 20\n')
    process = subprocess.Popen(
        [sys.executable, "-m", "polarmem_server.faces.cli", "serve", "--config", str(config)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=tmp_path,
    )
    try:
        line = process.stdout.readline()
        assert "serving on" in line, process.stderr.read() if process.poll() is not None else line
        address = line.split("serving on ")[1].split(";")[0]
        config.write_text(server_part + f'\n[client]\naddress = "{address}"\nnamespace = "shared"\ntimeout_s = 20\n')
        assert run(capsys, "namespace", "create", "shared", "--encoder", "none", "--config", config)[0] == 0
        code, out, _ = run(capsys, "remember", "--id", "a", "--kind", "text", "--text", "hello", "--config", config)
        assert code == 0 and "hello" in out
    finally:
        process.terminate()
        _, err = process.communicate(timeout=15)
    assert process.returncode == 0, err
    # the [server] form: its table is read, [client] is not the server's either
    config.write_text(f'[server]\nworkers = 3\n\n[client]\naddress = "{address}"\n')
    assert load_config(env={}, config_file=str(config)).workers == 3
    config.write_text('workers = 3\nspeed = 11\n\n[client]\naddress = "x"\n')
    with pytest.raises(ValueError, match=r"unknown settings \['speed'\]"):  # a real mistake is still refused
        load_config(env={}, config_file=str(config))


def test_serve_without_the_cores_entry_refuses_in_one_line(tmp_path):
    """A build whose `_front` module (the core's Recall entry) is missing cannot answer a Recall:
    `serve` says so in one line naming the fix, with status 2 and no traceback."""
    blocked = (
        "import sys; sys.modules['polarmem_server._front'] = None; from polarmem_server.faces.cli import main; "
        f"sys.exit(main(['serve', '--address', '127.0.0.1:0', '--data-dir', {str(tmp_path / 'data')!r}, "
        "'--metrics-port', '-1']))"
    )
    done = subprocess.run([sys.executable, "-c", blocked], capture_output=True, text=True, cwd=tmp_path, timeout=120)
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    lines = [line for line in done.stderr.splitlines() if line.startswith("error: ")]
    assert len(lines) == 1 and lines[0].startswith("error: Recall needs the core's entry"), done.stderr
    assert "libgrpc++-dev" in lines[0]


def test_backup_restore_verify_help_reaches_their_own_parser(capsys):
    for command in ("backup", "restore", "verify"):
        with pytest.raises(SystemExit) as info:
            main([command, "--help"])
        assert info.value.code == 0 and f"usage: polarmem {command}" in capsys.readouterr().out


def test_auto_rule_and_approximate_index_from_the_command_line(server, client, capsys):
    conn = ["--address", server.address]
    code, out, _ = run(
        capsys,
        "namespace",
        "create",
        "a",
        "--space",
        f"vis:{DIM}",
        "--encoder",
        "none",
        "--partitioner",
        "auto",
        "--declared-accuracy",
        0.9,
        "--ann",
        "--ann-m",
        8,
        "--json",
        *conn,
    )
    info = json.loads(out)
    assert code == 0 and info["config"]["declared_accuracy"] == 0.9 and info["config"]["ann"]["m"] == 8
    assert info["rule"]["recall_mode"] == "RECALL_MODE_STRICT" and "declared" in info["rule"]["reason"]
    for i in range(4):
        client.remember("a", id=f"i{i}", vectors={"vis": vec(i)}, states={"dog": "has" if i % 2 else "not_has"})
    code, out, _ = run(
        capsys,
        "recall",
        "--required",
        "dog",
        "--approximate",
        "--ef-search",
        32,
        "--no-rank-by-confidence",
        "-n",
        "a",
        "--vectors-json",
        json.dumps({"vis": vec(1)}),
        *conn,
    )
    assert code == 0 and "mode=rule->strict" in out and "i1" in out
    code, out, _ = run(capsys, "namespace", "update", "a", "--declared-accuracy", 0.7, *conn)
    assert code == 0 and client.get_namespace("a").rule.recall_mode == client_pb.RECALL_MODE_HARD
    code, _, err = run(capsys, "recall", "--required", "dog", "--approximate", "-n", "plain", *conn)
    assert code == 2 and "NOT_FOUND" in err
    client.create_namespace("plain", spaces=[("vis", DIM)], encoder="none")
    code, _, err = run(
        capsys,
        "recall",
        "--required",
        "dog",
        "--approximate",
        "--allow-unknown-concepts",
        "-n",
        "plain",
        "--vectors-json",
        json.dumps({"vis": vec(1)}),
        *conn,
    )
    assert code == 2 and "FAILED_PRECONDITION" in err and "config.ann" in err


def test_ann_alone_gives_the_default_index_and_a_kind_the_backend_lacks_is_named(server, client, capsys):
    conn = ["--address", server.address]
    code, out, _ = run(
        capsys, "namespace", "create", "d", "--space", f"vis:{DIM}", "--encoder", "none", "--ann", "--json", *conn
    )
    assert code == 0 and json.loads(out)["config"]["ann"]["kind"] == "hnsw"
    assert client.get_namespace("d").config.ann.ef_search == 64
    code, _, err = run(
        capsys,
        "namespace",
        "create",
        "i",
        "--space",
        f"vis:{DIM}",
        "--encoder",
        "none",
        "--ann-kind",
        "ivf",
        "--ann-nlist",
        64,
        *conn,
    )
    assert code == 2 and "INVALID_ARGUMENT" in err and "config.ann.kind 'ivf': the local backend builds 'hnsw'" in err
    assert [n.name for n in client.list_namespaces()] == ["d"]


def test_an_open_vocabulary_from_the_command_line(server, client, capsys):
    """`namespace create` makes an open vocabulary unless --closed-vocabulary; `concepts` pages it."""
    address = ("--address", server.address)
    code, out, _ = run(capsys, "namespace", "create", "notes", "--encoder", "none", "--space", f"vis:{DIM}", *address)
    assert code == 0 and "open vocabulary" in out
    code, out, _ = run(
        capsys,
        "namespace",
        "create",
        "fixed",
        "--closed-vocabulary",
        "--encoder",
        "none",
        "--space",
        f"vis:{DIM}",
        *address,
    )
    assert code == 0 and "declared vocabulary" in out
    code, _, err = run(
        capsys,
        "remember",
        "-n",
        "notes",
        "--id",
        "n1",
        "--kind",
        "text",
        "--text",
        "User does not drink coffee, only green tea",
        *address,
    )
    assert code == 0, err
    code, out, _ = run(capsys, "concepts", "-n", "notes", "--page-size", "2", *address)
    assert code == 0 and "coffee" in out and "2 of 4 concepts" in out and "--page-token" in out
    code, out, _ = run(capsys, "concepts", "-n", "notes", "--all", "--json", *address)
    body = json.loads(out)
    counts = {c["concept"]: c["stats"] for c in body["concepts"]}
    assert body["total"] == 4 and int(counts["coffee"]["not_has"]) == 1 and int(counts["coffee"].get("has", 0)) == 0
    code, _, err = run(capsys, "concepts", "-n", "nope", *address)
    assert code != 0 and "nope" in err


def test_namespace_create_shows_the_image_templates_only_as_what_they_are(server, capsys):
    """A namespace for text notes: `create` does not print four image questions as if they
    applied; it says what they are for, and `namespace get` (and a create that set them) lists them."""
    address = ("--address", server.address)
    code, out, _ = run(capsys, "namespace", "create", "notes", "--encoder", "none", "--space", f"vis:{DIM}", *address)
    assert code == 0 and "Is there a" not in out
    assert (
        "4 questions about an image, used only to verify visual items (`polarmem namespace get notes` lists them)"
        in out
    )
    code, out, _ = run(capsys, "namespace", "get", "notes", *address)
    assert code == 0 and "template 1: Is there a {c} in this image?" in out and "only to verify visual items" in out
    code, out, _ = run(
        capsys,
        "namespace",
        "create",
        "photos",
        "--encoder",
        "none",
        "--space",
        f"vis:{DIM}",
        "--template",
        "A {c}?",
        *address,
    )
    assert code == 0 and "template 1: A {c}?" in out  # set by the user: shown


@pytest.mark.parametrize(
    "flags, kind",
    [
        (["--text", "the meeting moved to Friday"], "text"),  # only text: a text note (as the MCP tool infers)
        (["--text", "a dog on a lawn", "--content", "dog.jpg", "--verify", "dog"], "visual"),  # an image
        (["--content", "dog.jpg", "--verify", "dog"], "visual"),
        (["--state", "dog=has"], None),  # neither: the schema's default (visual)
        (["--kind", "visual", "--text", "a caption"], "visual"),  # --kind wins
    ],
)
def test_remember_from_flags_infers_the_kind(flags, kind):
    args = cli.build_parser().parse_args(["remember", "-n", "x", "--id", "a", *flags])
    assert commands._single_item(args).get("kind") == kind


def test_remember_with_only_text_stores_a_text_note(server, client, capsys):
    client.create_namespace("notes", spaces=[("vis", DIM)], encoder="none")
    code, out, err = run(
        capsys,
        "remember",
        "-n",
        "notes",
        "--id",
        "n1",
        "--text",
        "User does not drink coffee",
        "--address",
        server.address,
    )
    assert code == 0, err
    item = client.get_item("notes", "n1").item
    assert KIND_NAMES[item.kind] == "text" and "coffee" in item.not_has  # a note, and it learned


def test_a_command_started_before_the_server_waits_for_it(tmp_path, capsys):
    """`polarmem serve & polarmem namespace create ...`: the command goes out before the server
    listens and succeeds once it does (within --timeout), instead of failing with UNAVAILABLE."""
    import socket
    import threading
    import time

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        address = f"127.0.0.1:{sock.getsockname()[1]}"
    outcome = {}
    command = threading.Thread(
        target=lambda: outcome.update(
            code=main(
                [
                    "namespace",
                    "create",
                    "late",
                    "--encoder",
                    "none",
                    "--space",
                    f"vis:{DIM}",
                    "--address",
                    address,
                    "--timeout",
                    "30",
                ]
            )
        )
    )
    command.start()
    time.sleep(1.0)  # the server starts a second later
    assert command.is_alive(), capsys.readouterr()
    with PolarMemServer(make_config(tmp_path, address=address)):
        command.join(30)
    out, err = capsys.readouterr()
    assert outcome.get("code") == 0, err
    assert "created namespace 'late'" in out


def test_a_closed_pipe_and_ctrl_c_end_a_command_without_a_traceback(lexical, tmp_path, monkeypatch):
    """Before: `polarmem items --all | head -1` ended in a BrokenPipeError traceback, and Ctrl-C
    on a waiting command in a KeyboardInterrupt one. Now they end as any Unix tool does: 141
    (SIGPIPE) and 130 (SIGINT), nothing on stderr but a newline."""
    import os
    import signal
    import socket
    import time

    import io

    polarmem = [sys.executable, "-m", "polarmem_server.faces.cli"]
    read, write = os.pipe()
    os.close(read)  # no reader: the first line written fails with EPIPE, as after `| head -1`
    with io.TextIOWrapper(io.FileIO(write, "w"), line_buffering=True) as broken:
        monkeypatch.setattr(sys, "stdout", broken)
        assert main(["namespace", "list", "--address", lexical.address]) == 128 + signal.SIGPIPE
        monkeypatch.undo()

    with socket.socket() as free:
        free.bind(("127.0.0.1", 0))
        nowhere = f"127.0.0.1:{free.getsockname()[1]}"
    waiting = subprocess.Popen(
        [*polarmem, "wait-ready", "--address", nowhere, "--wait-s", "60"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=tmp_path,
        # Ctrl-C as a terminal delivers it: a suite started in the background by a shell without
        # job control (`make test &`) inherits SIGINT ignored, and Python then never handles it
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    time.sleep(1.5)  # into the wait
    waiting.send_signal(signal.SIGINT)
    _, err = waiting.communicate(timeout=30)
    assert waiting.returncode == 128 + signal.SIGINT and "Traceback" not in err, err


def test_whitespace_is_neither_a_note_nor_a_question(lexical, tmp_path, capsys):
    """Before: `remember --text "   "` stored an item with no words and `recall "   "` answered
    every item of the namespace (an empty query was refused, a blank one ranked by its likeness
    to nothing)."""
    address = lexical.address
    assert run(capsys, "namespace", "create", "notes", "--address", address)[0] == 0
    assert run(capsys, "remember", "-n", "notes", "--address", address, "--id", "a", "--text", "a dog")[0] == 0
    for blank in ("  \t ", "\u200b\u2060 \ufeff"):  # zero-width characters show nothing either
        code, _, err = run(capsys, "remember", "-n", "notes", "--address", address, "--id", "ws", "--text", blank)
        assert code == 2 and "text: only whitespace or zero-width characters" in err, err
        code, _, err = run(capsys, "recall", blank, "-n", "notes", "--address", address)
        assert code == 2 and "query is empty" in err, err
    code, out, _ = run(capsys, "items", "-n", "notes", "--address", address, "--json")
    assert code == 0 and [item["id"] for item in json.loads(out)["items"]] == ["a"]


def test_a_damaged_last_write_file_is_ignored_not_sent(lexical, tmp_path, capsys, monkeypatch):
    """The CLI keeps each server's last-write token in a file (read-your-writes across commands).
    Before: a file holding a token no server reads (damaged, another release's) was sent with
    every read, and every recall of every later command failed INVALID_ARGUMENT, nothing pointing
    at the file. Now such a token is not loaded."""
    from polarmem_server.faces.cli import last_write

    monkeypatch.setenv("POLARMEM_STATE_DIR", str(tmp_path / "state"))
    address = lexical.address
    assert run(capsys, "namespace", "create", "notes", "--address", address)[0] == 0
    assert run(capsys, "remember", "-n", "notes", "--address", address, "--id", "a", "--text", "a dog")[0] == 0
    kept = last_write.token_file(address)
    kept.parent.mkdir(parents=True, exist_ok=True)
    for damaged in ("07" + "00" * 8, "01abcd", "not hex"):
        kept.write_text(damaged)
        assert last_write.load(address) == b""
        code, out, err = run(capsys, "recall", "a dog", "-n", "notes", "--address", address, "--json")
        assert code == 0 and [hit["id"] for hit in json.loads(out)["hits"]] == ["a"], err
    kept.write_text("02" + "00" * 7 + "05")  # a --processes primary's: kept
    assert last_write.load(address) == bytes.fromhex("02" + "00" * 7 + "05")


def test_a_count_or_deadline_out_of_range_names_its_flag(lexical, capsys):
    """Before: `-k 99999999999999` said only "Value out of range" (protobuf's words), and
    `--timeout -1` or `0` was sent as a deadline already past."""
    code, _, err = run(capsys, "recall", "dog", "-n", "t", "--address", lexical.address, "-k", "99999999999999")
    assert code == 2 and "top_k must be an integer from 0 to 4294967295" in err, err
    for timeout in ("-1", "0"):
        code, _, err = run(capsys, "namespace", "list", "--address", lexical.address, "--timeout", timeout)
        assert code == 2 and "--timeout: the deadline of each call must be > 0 seconds" in err, err


def test_conflicting_flags_are_refused_before_any_call(lexical, capsys):
    """Before: `recall --required tea --forbidden tea` answered an empty list, `update --metadata
    k=v --clear-metadata` cleared the metadata given, and a concept given two states kept the last."""
    address = lexical.address
    assert run(capsys, "namespace", "create", "notes", "--address", address)[0] == 0
    code, _, err = run(
        capsys, "recall", "tea", "-n", "notes", "--address", address, "--required", "tea", "--forbidden", "tea"
    )
    assert code == 2 and "--required and --forbidden both name 'tea'" in err, err
    code, _, err = run(
        capsys,
        "remember",
        "-n",
        "notes",
        "--address",
        address,
        "--id",
        "a",
        "--text",
        "tea",
        "--state",
        "tea=has",
        "--state",
        "tea=not_has",
    )
    assert code == 2 and "--state: 'tea' given as has and as not_has" in err, err
    code, _, err = run(
        capsys, "update", "a", "-n", "notes", "--address", address, "--metadata", "k=v", "--clear-metadata"
    )
    assert code == 2 and "--metadata and --clear-metadata: give one" in err, err
    assert lexical.memory.get_items("notes", ["a"]) == [None]  # nothing was stored
