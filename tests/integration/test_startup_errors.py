"""Every configuration or environment error at start-up: exit status 1 and ONE line that names
the setting and the fix, no traceback.

Before: a garbage TLS certificate or a key not matching it ended in "Failed to bind to address";
a missing certificate file, a locked data directory or a metrics port in use in a raw traceback;
a gRPC port clash did not name the port."""

import os
import socket
import subprocess
import sys
from pathlib import Path


from polarmem_server.storage.local.store import Store
from servertools import self_signed_certificate


def serve(tmp_path: Path, *flags: str, env: dict | None = None) -> subprocess.CompletedProcess:
    command = [
        sys.executable,
        "-m",
        "polarmem_server.faces.cli",
        "serve",
        "--address",
        "127.0.0.1:0",
        "--data-dir",
        str(tmp_path / "data"),
        "--metrics-port",
        "-1",
        *flags,
    ]
    return subprocess.run(
        command, capture_output=True, text=True, timeout=120, cwd=tmp_path, env={**os.environ, **(env or {})}
    )


def one_line_error(result: subprocess.CompletedProcess) -> str:
    assert result.returncode == 1, (result.returncode, result.stdout, result.stderr)
    assert "Traceback" not in result.stderr, result.stderr
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1, result.stderr
    return lines[0]


def listening_socket() -> socket.socket:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen()
    return sock


def self_signed(tmp_path: Path, name: str) -> tuple[Path, Path]:
    return self_signed_certificate(tmp_path, stem=name)


def test_garbage_certificate(tmp_path):
    (tmp_path / "bad.crt").write_text("not a certificate\n")
    (tmp_path / "bad.key").write_text("not a key\n")
    line = one_line_error(
        serve(tmp_path, "--tls-cert", str(tmp_path / "bad.crt"), "--tls-key", str(tmp_path / "bad.key"))
    )
    assert "setting tls_cert" in line and "PEM" in line


def test_key_that_does_not_match_the_certificate(tmp_path):
    cert, _ = self_signed(tmp_path, "a")
    _, other_key = self_signed(tmp_path, "b")
    line = one_line_error(serve(tmp_path, "--tls-cert", str(cert), "--tls-key", str(other_key)))
    assert "setting tls_key" in line and "not the private key" in line


def test_missing_certificate_file(tmp_path):
    _, key = self_signed(tmp_path, "a")
    line = one_line_error(serve(tmp_path, "--tls-cert", str(tmp_path / "missing.crt"), "--tls-key", str(key)))
    assert "setting tls_cert" in line and "missing.crt" in line and "does not exist" in line


def test_a_working_certificate_still_serves(tmp_path):
    """The checks above must not refuse a good pair (started in-process: quicker than a child)."""
    from polarmem_server.api.server import PolarMemServer
    from servertools import make_config

    cert, key = self_signed(tmp_path, "a")
    server = PolarMemServer(make_config(tmp_path, tls_cert=str(cert), tls_key=str(key))).start()
    server.stop()


def test_locked_data_directory(tmp_path):
    holder = Store(tmp_path / "data")
    try:
        line = one_line_error(serve(tmp_path))
    finally:
        holder.close()
    assert "setting data_dir" in line and "in use by another process" in line


def test_metrics_port_in_use(tmp_path):
    sock = listening_socket()
    port = sock.getsockname()[1]
    try:
        line = one_line_error(serve(tmp_path, "--metrics-port", str(port)))
    finally:
        sock.close()
    assert "setting metrics_port" in line and f"127.0.0.1:{port}" in line and "in use" in line


def test_grpc_port_in_use(tmp_path):
    sock = listening_socket()
    port = sock.getsockname()[1]
    try:
        line = one_line_error(serve(tmp_path, "--address", f"127.0.0.1:{port}"))
    finally:
        sock.close()
    assert "setting address" in line and f"127.0.0.1:{port}" in line and "in use" in line


def test_a_port_whose_last_connection_waits_in_time_wait_is_free(tmp_path):
    """A server stopped while a client was connected closes first, so its side of the connection
    waits a minute in TIME_WAIT on the port, held by no process. The start-up check bound its probe
    without SO_REUSEADDR (gRPC binds with it) and refused every restart in that minute as "in use by
    another process" (a `systemctl restart` failed for ~60 s). Made here on purpose: a listener
    that accepts a connection and closes its side first."""
    listener = socket.socket()
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", 0))
    listener.listen()
    port = listener.getsockname()[1]
    client = socket.create_connection(("127.0.0.1", port))
    accepted, _ = listener.accept()
    accepted.close()  # the server's side closes first: TIME_WAIT on 127.0.0.1:port
    client.recv(1)
    client.close()
    listener.close()
    command = [sys.executable, "-m", "polarmem_server.faces.cli", "serve", "--address", f"127.0.0.1:{port}"]
    command += ["--data-dir", str(tmp_path / "data"), "--metrics-port", "-1"]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tmp_path)
    try:
        line = process.stdout.readline()
        assert f"serving on 127.0.0.1:{port}" in line, process.stderr.read() if process.poll() is not None else line
    finally:
        process.terminate()
        process.communicate(timeout=30)


def test_places_out_of_range_are_one_line_each(tmp_path):
    """Before: a port past 65535 (address or metrics) ended in an OverflowError traceback, a data
    directory that is a file in a FileExistsError one, and an empty one put the store's files in
    the current directory."""
    (tmp_path / "a-file").write_text("not a directory\n")
    for flags, words in (
        (("--address", "127.0.0.1:99999"), "setting address: port 99999 is past 65535"),
        (("--metrics-port", "70000"), "setting metrics_port: use 0-65535, or -1 for no metrics, got 70000"),
        (("--metrics-port", "-5"), "setting metrics_port: use 0-65535, or -1 for no metrics, got -5"),
        (("--data-dir", ""), "setting data_dir: empty"),
        (("--data-dir", str(tmp_path / "a-file")), "is a file, not a directory"),
    ):
        line = one_line_error(serve(tmp_path, *flags))
        assert words in line, (flags, line)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a-file"]  # nothing created anywhere


def test_unreadable_setting_from_the_environment(tmp_path):
    line = one_line_error(serve(tmp_path, env={"POLARMEM_WORKERS": "many"}))
    assert "setting workers" in line and "'many'" in line


def test_missing_tokens_file(tmp_path):
    line = one_line_error(serve(tmp_path, "--tokens-file", str(tmp_path / "tokens.toml")))
    assert "setting tokens_file" in line and "does not exist" in line
