"""The wheel as a user gets it: built by pip, installed WITHOUT extras into a fresh venv (pip
fetches the runtime dependencies), then `polarmem serve` from that venv answers grpc.health.v1
SERVING and creates a namespace over a real socket.

The default test builds the wheel the way `make install` does (`pip wheel --no-build-isolation`,
reusing the CMake build directory, so it costs a repackage, not a compile) and caches it under
build/wheel-cache/ keyed by a hash of the sources. The `slow` test runs exactly what a user runs,
`pip wheel .` with build isolation, from a copy of the sources in a temp dir (a full compile).
"""

from __future__ import annotations

import hashlib
import os
import shutil
import signal
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

REPO = Path(__file__).resolve().parents[2]
SOURCES = ("pyproject.toml", "CMakeLists.txt", "README.md", "cpp", "protos", "polarmem_server")
WHEEL_CACHE = REPO / "build" / "wheel-cache"
START_TIMEOUT_S = 120


def source_files() -> list[Path]:
    files = []
    for name in SOURCES:
        path = REPO / name
        if path.is_file():
            files.append(path)
        else:
            files.extend(
                p
                for p in sorted(path.rglob("*"))
                if p.is_file() and "__pycache__" not in p.parts and not p.name.endswith((".so", ".pyc"))
            )
    return files


def sources_hash() -> str:
    """A hash of every file the wheel is built from (built modules excluded)."""
    digest = hashlib.sha256()
    for path in source_files():
        digest.update(str(path.relative_to(REPO)).encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def pip_wheel(source: Path, out: Path, isolated: bool) -> Path:
    out.mkdir(parents=True, exist_ok=True)
    command = [sys.executable, "-m", "pip", "wheel", "--no-deps", "--wheel-dir", str(out), str(source)]
    if not isolated:
        command.insert(4, "--no-build-isolation")
    run = subprocess.run(command, capture_output=True, text=True, timeout=1800)
    assert run.returncode == 0, f"pip wheel failed:\n{run.stdout[-3000:]}\n{run.stderr[-3000:]}"
    wheels = list(out.glob("polarmem_server-*.whl"))
    assert len(wheels) == 1, wheels
    return wheels[0]


def cached_wheel() -> Path:
    """The wheel of the current sources, built once per source hash."""
    target = WHEEL_CACHE / sources_hash()
    existing = list(target.glob("polarmem_server-*.whl"))
    if existing:
        return existing[0]
    staging = WHEEL_CACHE / f"tmp-{os.getpid()}"
    shutil.rmtree(staging, ignore_errors=True)
    wheel = pip_wheel(REPO, staging, isolated=False)
    for stale in WHEEL_CACHE.iterdir():  # one wheel kept: the sources' current one
        if stale != staging:
            shutil.rmtree(stale, ignore_errors=True)
    staging.rename(target)
    return target / wheel.name


def check_wheel_contents(wheel: Path) -> None:
    names = zipfile.ZipFile(wheel).namelist()
    assert any(n.startswith("polarmem_server/_core") and n.endswith(".so") for n in names), "no compiled core"
    assert any(n.endswith("memory_service_pb2_grpc.py") for n in names), "no generated gRPC stubs"
    assert "polarmem_server/py.typed" in names
    # the API contract ships beside its stubs, for clients in other languages
    assert {"polarmem/v1/memory_service.proto", "polarmem/common/v1/enums.proto"} <= set(names), "no .proto files"
    entry_points = next(n for n in names if n.endswith(".dist-info/entry_points.txt"))
    assert "polarmem = polarmem_server.faces.cli:main" in zipfile.ZipFile(wheel).read(entry_points).decode()


def fresh_venv(path: Path, wheel: Path) -> Path:
    """A venv with only the wheel and the runtime dependencies pip resolves for it (no extras).
    This pip installs into it (`--python`): a pip of its own would add its install time and nothing
    the test looks at."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(path)], check=True, timeout=300)
    install = subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(path / "bin" / "python"), "install", "-q", str(wheel)],
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert install.returncode == 0, f"pip install of the wheel failed:\n{install.stdout}\n{install.stderr}"
    return path / "bin"


def serve_and_check(bin_dir: Path, work: Path) -> None:
    """Start `polarmem serve` from the venv on a free port; health SERVING; create a namespace; stop."""
    data_dir = work / "data"
    log = work / "serve.log"
    with open(log, "w") as stderr:
        # cwd outside the source tree, so only the installed package can be imported
        process = subprocess.Popen(
            [
                str(bin_dir / "polarmem"),
                "serve",
                "--address",
                "127.0.0.1:0",
                "--data-dir",
                str(data_dir),
                "--metrics-port",
                "-1",
                "--log-level",
                "WARNING",
            ],
            stdout=subprocess.PIPE,
            stderr=stderr,
            text=True,
            cwd=work,
        )
    try:
        line = process.stdout.readline()
        assert "serving on" in line, f"polarmem serve did not start: {line!r}\n{log.read_text()[-4000:]}"
        address = line.split("serving on ")[1].split(";")[0]
        with grpc.insecure_channel(address) as channel:
            health = health_pb2_grpc.HealthStub(channel)
            deadline = time.monotonic() + START_TIMEOUT_S
            status = None
            while time.monotonic() < deadline:
                status = health.Check(health_pb2.HealthCheckRequest(service=""), timeout=5).status
                if status == health_pb2.HealthCheckResponse.SERVING:
                    break
                time.sleep(0.1)
            assert status == health_pb2.HealthCheckResponse.SERVING
        created = subprocess.run(
            [
                str(bin_dir / "python"),
                "-c",
                "import sys; from polarmem_server.faces.client import PolarMemClient\n"
                "with PolarMemClient(sys.argv[1]) as c:\n"
                "    info = c.create_namespace('packaged', spaces=[('vis', 8)], encoder='none')\n"
                "    print(info.name, c.list_namespaces()[0].name)",
                address,
            ],
            capture_output=True,
            text=True,
            timeout=60,
            cwd=work,
        )
        assert created.returncode == 0, created.stderr
        assert created.stdout.split() == ["packaged", "packaged"]
        build = subprocess.run(
            [
                str(bin_dir / "python"),
                "-c",
                "from polarmem_server.index import build_info; print(build_info()['simd_active'])",
            ],
            capture_output=True,
            text=True,
            timeout=60,
            cwd=work,
        )
        assert build.returncode == 0 and build.stdout.strip() in ("scalar", "avx2", "avx512"), build.stderr
    finally:
        process.send_signal(signal.SIGTERM)
        code = process.wait(60)
        process.stdout.close()
    assert code == 0, f"polarmem serve exited {code}:\n{log.read_text()[-4000:]}"


def test_wheel_installs_without_extras_and_serves(tmp_path):
    wheel = cached_wheel()
    check_wheel_contents(wheel)
    serve_and_check(fresh_venv(tmp_path / "venv", wheel), tmp_path)


@pytest.mark.slow
def test_isolated_pip_wheel_from_a_clean_copy(tmp_path):
    source = tmp_path / "src"
    source.mkdir()
    for path in source_files():
        rel = path.relative_to(REPO)
        (source / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(path, source / rel)
    wheel = pip_wheel(source, tmp_path / "dist", isolated=True)
    check_wheel_contents(wheel)
    serve_and_check(fresh_venv(tmp_path / "venv", wheel), tmp_path)
