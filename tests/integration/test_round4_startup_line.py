"""One true start-up line about metrics (issue 53): `serve --metrics-port -1` logged "metrics on
off" (and the CLI printed "metrics on port 0")."""

import logging

from polarmem_server.api.server import PolarMemServer
from servertools import make_config


def start_and_log(tmp_path, caplog, metrics_port: int) -> tuple[PolarMemServer, str]:
    with caplog.at_level(logging.INFO, logger="polarmem.server"):
        server = PolarMemServer(make_config(tmp_path, metrics_port=metrics_port, log_level="INFO")).start()
    lines = [r.getMessage() for r in caplog.records if r.getMessage().startswith("serving on")]
    assert len(lines) == 1, lines
    return server, lines[0]


def test_metrics_off_is_said_once_and_truly(tmp_path, caplog):
    server, line = start_and_log(tmp_path, caplog, -1)
    try:
        assert line.endswith("(metrics off)") and "metrics on" not in line
        assert server.metrics_summary == "metrics off"
    finally:
        server.stop()


def test_metrics_on_names_the_bound_port(tmp_path, caplog):
    server, line = start_and_log(tmp_path, caplog, 0)
    try:
        assert server.metrics_port > 0 and line.endswith(f"(metrics on port {server.metrics_port})")
    finally:
        server.stop()
