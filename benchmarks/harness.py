"""The benchmarks' shared harness: one implementation each of what several scripts need.

* servers: `serve_command` (argv of `polarmem serve`), `start_serve` (start one, wait for its
  start-up line, read its address, metrics port and compiled front), `start_server` (the benchmarks'
  usual local server), `stop` (a Popen or a PID: a signal, then SIGKILL after a timeout);
* counters from /proc: `cpu_seconds` (a process's utime + stime), `tree_cpu_seconds` (a process and
  its descendants), `thread_cpu_ns` (schedstat run time of a process's live threads), `tree_pids`,
  `status_bytes` / `rss_bytes` / `rss_mb` / `tree_rss_mb` (VmRSS, VmHWM, ...);
* the host: `cpu_model`, `cpu_flags`, `load_average`, `uptime`, `machine`, `host`;
* reports: `write_report` (JSON with the build's `build_info`);
* data: `dev_rows`, `dev_captions`, `dev_labels` (the COCO dev set bundled as
  polarmem_server/data/coco_val2014_dev10k.jsonl.gz, or a JSONL file);
* Milvus: `milvus_lock` (the machine's one-Milvus lock of tests/milvus_server.py).

Scripts import it as `from harness import ...` (run as `python benchmarks/NAME.py`, the folder is on
sys.path; a script loaded by path puts it there first). Nothing here measures anything by itself.
"""

from __future__ import annotations

import json
import os
import platform
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from functools import lru_cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
TICK = os.sysconf("SC_CLK_TCK")  # /proc/PID/stat times are in these ticks per second


# ---- servers ------------------------------------------------------------------------------------
def serve_command(*args: str, polarmem: str | Path | None = None) -> list[str]:
    """argv of `polarmem serve ARGS`: this interpreter's package (`python -m polarmem_server.faces.cli`),
    or the `polarmem` executable `polarmem` (another venv's, for a peer install)."""
    head = [str(polarmem)] if polarmem else [sys.executable, "-m", "polarmem_server.faces.cli"]
    return [*head, "serve", *args]


def start_serve(
    command: list[str], env: dict[str, str] | None = None, cwd: str | Path | None = None, replicas: int = 0
) -> subprocess.Popen:
    """Starts `command` (a `polarmem serve ...`), its stdout and stderr piped together, and waits for
    its start-up line ("polarmem serving on ADDRESS; metrics on port P; compiled front|Python listener")
    and, with `replicas`, for that many "replica N serving on" log lines (`--processes` N + 1 at log
    level INFO). The rest of its output is drained by a thread, so a full pipe never blocks it.
    Returns the process with `address`, `metrics_port` (-1 when off) and `front` ("compiled front" or
    "Python listener": who listens on the address) set on it. `cwd`: run it outside the source tree so the installed package runs."""
    process = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env, cwd=cwd, stdin=subprocess.DEVNULL
    )
    line, ready, tail = "", 0, []
    for out in process.stdout:
        tail = (tail + [out])[-20:]
        if "polarmem serving on " in out:
            line = out
        elif "replica " in out and " serving on " in out:
            ready += 1
        if line and ready >= replicas:
            break
    if not line or ready < replicas:
        process.kill()
        process.wait()
        raise RuntimeError(
            f"{' '.join(command[:3])} did not start (exit {process.returncode}): {''.join(tail)[-2000:]}"
        )
    threading.Thread(target=lambda: [None for _ in process.stdout], daemon=True).start()
    after = line.split("polarmem serving on ", 1)[1]
    process.address = after.split(";")[0].strip()
    process.metrics_port = int(after.split("metrics on port ")[1].split(";")[0]) if "metrics on port " in after else -1
    process.front = after.rsplit(";", 1)[1].strip()
    return process


def start_server(
    data_dir: Path,
    max_concurrent: int,
    front: str = "auto",
    *extra: str,
    log_level: str = "WARNING",
    replicas: int = 0,
) -> tuple[subprocess.Popen, str, float]:
    """The benchmarks' local `polarmem serve` on 127.0.0.1:0 with `data_dir`, admitting
    `max_concurrent` calls (workers: that + 16), run from `data_dir`'s parent (outside the source
    tree), with the metrics port (the process's `metrics_port`). `front`: who listens on the
    address (auto, compiled, python: the server's setting). (process, address, seconds to the
    start-up line)."""
    started = time.perf_counter()
    process = start_serve(
        serve_command(
            "--address",
            "127.0.0.1:0",
            "--data-dir",
            str(data_dir),
            "--metrics-port",
            "0",
            "--workers",
            str(max_concurrent + 16),
            "--max-concurrent-rpcs",
            str(max_concurrent),
            "--log-level",
            log_level,
            "--front",
            front,
            *extra,
        ),
        cwd=data_dir.parent,
        replicas=replicas,
    )
    return process, process.address, time.perf_counter() - started


def stop(target: subprocess.Popen | int, timeout_s: float = 60.0, sig: int = signal.SIGTERM) -> None:
    """Stops a process (a Popen, or a PID: e.g. one this run started through another tool) with
    `sig`, waits up to `timeout_s` for it to end, then SIGKILLs it. A process already gone is fine."""
    if isinstance(target, int):
        _stop_pid(target, timeout_s, sig)
        return
    if target.poll() is not None:
        return
    target.send_signal(sig)
    try:
        target.wait(timeout_s)
    except subprocess.TimeoutExpired:
        target.kill()
        target.wait(30)


def _stop_pid(pid: int, timeout_s: float, sig: int) -> None:
    def gone() -> bool:
        try:
            if os.waitpid(pid, os.WNOHANG)[0] == pid:  # our child: reap it
                return True
        except ChildProcessError:
            pass  # not our child: its parent reaps it
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (FileNotFoundError, ProcessLookupError):
            return True
        return state in ("Z", "X")

    try:
        os.kill(pid, sig)
    except ProcessLookupError:
        return
    deadline = time.monotonic() + timeout_s
    while not gone():
        if time.monotonic() > deadline:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                return
            deadline = time.monotonic() + 30
        time.sleep(0.05)


# ---- counters from /proc --------------------------------------------------------------------------
def _stat_fields(pid: int | str) -> list[str]:
    """/proc/PID/stat after the command name: fields[0] is field 3 (state), fields[1] the parent,
    fields[11:15] utime, stime, cutime, cstime (in clock ticks)."""
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()


def cpu_seconds(pid: int | str, reaped: bool = False) -> float:
    """utime + stime of process `pid` (all its threads, those that ended too), in seconds (10 ms
    ticks: for windows of many calls); `reaped`: plus the children it has waited for."""
    fields = _stat_fields(pid)
    ticks = int(fields[11]) + int(fields[12])
    if reaped:
        ticks += int(fields[13]) + int(fields[14])
    return ticks / TICK


def _parents() -> dict[int, list[int]]:
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                children.setdefault(int(_stat_fields(entry)[1]), []).append(int(entry))
            except OSError:
                continue  # ended meanwhile
    return children


def tree_pids(pid: int) -> list[int]:
    """`pid` and its live descendants."""
    children = _parents()
    found, todo = [], [pid]
    while todo:
        p = todo.pop()
        found.append(p)
        todo.extend(children.get(p, []))
    return found


def tree_cpu_seconds(pid: int, reaped: bool = False) -> float:
    """utime + stime of `pid` and its live descendants, in seconds; `reaped`: each one's waited-for
    children's too (a postmaster's ended backends)."""
    total = 0.0
    for p in tree_pids(pid):
        try:
            total += cpu_seconds(p, reaped)
        except OSError:
            continue  # ended between the listing and the read
    return total


def thread_cpu_ns(pid: int) -> int:
    """Run time of `pid`'s live threads (/proc/PID/task/*/schedstat), in nanoseconds: exact for one
    call; a thread that ended is gone from the sum (use `cpu_seconds` over long windows)."""
    total = 0
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            total += int((task / "schedstat").read_text().split()[0])
        except (FileNotFoundError, ProcessLookupError):
            pass
    return total


def status_bytes(pid: int | str = "self", key: str = "VmRSS") -> int:
    """A kB field of /proc/PID/status (VmRSS; VmHWM = peak RSS), in bytes; 0 where absent."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1]) * 1024
    return 0


def rss_bytes(pid: int | str = "self") -> int:
    """Resident memory of one process, in bytes."""
    return status_bytes(pid, "VmRSS")


def rss_mb(pid: int | str = "self") -> float:
    """Resident memory of one process (this one by default), in MiB (one decimal)."""
    return round(rss_bytes(pid) / 2**20, 1)


def tree_rss_mb(pid: int) -> float:
    """Resident memory of `pid` and its live descendants, in MiB (one decimal)."""
    total = 0
    for p in tree_pids(pid):
        try:
            total += status_bytes(p, "VmRSS")
        except OSError:
            continue
    return round(total / 2**20, 1)


# ---- the host -----------------------------------------------------------------------------------
@lru_cache(maxsize=1)
def _cpuinfo() -> tuple[str, frozenset[str]]:
    model, flags = "", frozenset()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name") and not model:
                model = line.split(":", 1)[1].strip()
            elif line.startswith("flags") and not flags:
                flags = frozenset(line.split(":", 1)[1].split())
    except OSError:
        pass
    return model or platform.processor() or platform.machine(), flags


def cpu_model() -> str:
    """The CPU's model name (/proc/cpuinfo), else what `platform` knows."""
    return _cpuinfo()[0]


def cpu_flags() -> frozenset[str]:
    """The CPU's feature flags (avx2, avx512f, avx512_vnni, ...)."""
    return _cpuinfo()[1]


def load_average(digits: int | None = 2) -> list[float]:
    """The 1, 5 and 15 minute load averages (rounded to `digits`; None: as the kernel gives them)."""
    return [x if digits is None else round(x, digits) for x in os.getloadavg()]


def uptime() -> str:
    """/proc/loadavg as it reads (load averages, runnable / all tasks, last PID)."""
    return Path("/proc/loadavg").read_text().strip()


def machine() -> dict:
    """The host in a report: CPU model and count, memory, platform, Python."""
    mem_kb = int(
        next(line.split()[1] for line in Path("/proc/meminfo").read_text().splitlines() if line.startswith("MemTotal"))
    )
    return {
        "cpu": cpu_model(),
        "cpu_count": os.cpu_count(),
        "memory_gib": round(mem_kb / 2**20, 1),
        "platform": platform.platform(),
        "python": platform.python_version(),
    }


def host() -> dict:
    """`machine()` with the SIMD flags the kernels dispatch on and the load average now."""
    flags = cpu_flags()
    return {
        **machine(),
        **{f: f in flags for f in ("avx2", "avx512f", "avx512_vnni", "avx512_bf16")},
        "load_average": load_average(),
    }


# ---- reports ------------------------------------------------------------------------------------
def build_info() -> dict:
    """The compiled core's build (version, compiler, SIMD compiled / active), or why there is none."""
    try:
        from polarmem_server.index import build_info as core_build_info

        return core_build_info()
    except ImportError as exc:
        return {"error": str(exc)}


def write_report(path: Path | str, report: dict, indent: int = 2, quiet: bool = False) -> Path:
    """Writes `report` as JSON to `path` (its folder made), with the build's `build_info` added
    when it has none; prints where (unless `quiet`: a report saved after every step)."""
    path = Path(path)
    report.setdefault("build_info", build_info())
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(report, indent=indent, default=str) + "\n")
    if not quiet:
        print(f"wrote {path}", flush=True)
    return path


# ---- data ---------------------------------------------------------------------------------------
def dev_rows(path: Path | str | None = None) -> list[dict]:
    """The COCO dev set's rows (id, captions, has, not_has): the copy bundled with the package
    (polarmem_server/data/coco_val2014_dev10k.jsonl.gz), or the JSONL file `path`."""
    if path is None:
        from polarmem_server.faces.evaluation import dev_rows as bundled

        return bundled()
    with Path(path).open() as handle:
        return [json.loads(line) for line in handle if line.strip()]


def dev_captions(path: Path | str | None = None) -> Iterator[str]:
    """Every caption of the dev set (5 per image), stripped, in file order."""
    return (caption.strip() for row in dev_rows(path) for caption in row["captions"])


def dev_labels(path: Path | str | None = None) -> list[str]:
    """The dev set's concept names (the 80 COCO labels), sorted."""
    names: dict[str, None] = {}
    for row in dev_rows(path):
        names.update(dict.fromkeys(row["has"] + row["not_has"]))
    return sorted(names)


# ---- Milvus -------------------------------------------------------------------------------------
def milvus_lock(wait_s: float = 3600):
    """The machine's Milvus lock (tests/milvus_server.py: one Milvus at a time), or exit when
    another Milvus keeps it for `wait_s`."""
    sys.path.insert(0, str(ROOT / "tests"))
    from milvus_server import LOCK_PATH, take_lock

    handle = take_lock(wait_s)
    if handle is None:
        raise SystemExit(f"another Milvus held {LOCK_PATH} for {wait_s:.0f} s")
    return handle
