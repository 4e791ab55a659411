"""Several server processes on one port (`polarmem serve --processes N`, config ``processes``).

One Python process is bound by its interpreter lock to about one core of Python work
(docs/performance.md measures how much of a Recall holds it), so a host with more cores serves
more reads with more processes. The pattern is grpc's ``examples/python/multiprocessing``: the
process forks its replicas *before* any gRPC object exists, and every process binds the same
port with SO_REUSEPORT; the kernel spreads incoming connections over them (a connection, and so
a client channel, stays with one process).

* The **primary** (the process that was started) owns the RocksDB data directory and every
  write, exactly as a single-process server does. It also listens on a private Unix socket for
  writes forwarded by the replicas, and publishes every stored write on a change board: the
  write's records in its namespace's change log, then the namespace's counter
  (library/replica.py, storage/local/secondary.py).
* Each **replica** opens the data directory as a RocksDB secondary instance and builds its own
  in-memory index; a thread polls the board every REPLICA_POLL_S and, for a namespace that
  changed, catches up with the primary (under the board's cut) and applies the namespace's new
  change-log records to its index: the changed items only, or a rebuild of the namespace where
  storage/local/secondary.py says so (created or deleted, new spaces, many items changed).
  Reads (Recall, GetItem, GetNamespace, ListNamespaces, GetConcept) are answered locally, but
  for one that must first learn a name new to an open vocabulary (a phrase a query names: a
  write), which the primary answers.
  Writes, ScoreConcepts (the scoring engine lives in the primary) and Backup are **forwarded**
  to the primary over the Unix socket with the caller's metadata and remaining deadline; the
  client gets the primary's answer or status unchanged. The replica counts such a call in its
  RPC series, as the client saw it; the primary leaves out of its own the calls that carry the
  group's forwarding mark (FORWARDED_HEADER with the group's secret, which no client knows), so a
  sum over the instances counts each call once.

Consistency: read-your-writes on a connection, bounded staleness across connections. A write is
acknowledged only once the primary stored it (and published it on the board). A replica that
forwarded it catches up and applies the primary's changes before it answers, so the next read
on the same connection — an agent's recall after its note — sees the write; the primary sees it
at once; every other replica within REPLICA_POLL_S plus one catch-up and one apply of its
changes, or at once for a read at READ_CONSISTENCY_STRONG or with a write's consistency token
(the primary answers every write with its store's position, storage/consistency.py): a replica
short of it hands the Recall from its compiled front to its servicer, which catches up before it
reads (api/consistency_tokens.py; tests/integration/test_server_processes.py checks all of it).
A write that failed or answered DEADLINE_EXCEEDED may still have been stored: it is seen within
that bound.

Replicas serve metrics on metrics_port + i (when metrics_port > 0), their own health, reflection
and admission limit; TLS and tokens are the same as the primary's, and SIGHUP to the primary
(re-read the tokens file) reaches them too.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import secrets
import shutil
import signal
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import grpc

from polarmem.v1 import memory_service_pb2
from polarmem_server import errors
from polarmem_server.api.service import client_remaining_s
from polarmem_server.api.temp_dirs import owned_temp_dir
from polarmem_server.library import ReplicaFollower, ReplicaMemory, change_board, open_replica

if TYPE_CHECKING:
    from polarmem_server.api.config import ServerConfig

log = logging.getLogger("polarmem.processes")
REPLICA_POLL_S = 0.02  # how often a replica reads the change board
SERVICE = memory_service_pb2.DESCRIPTOR.services_by_name["MemoryService"]
# Marks a call a replica forwarded to the primary; its value is the group's secret
# (ProcessGroup.forward_secret), so a client cannot keep its own calls out of the primary's counts.
FORWARDED_HEADER = "x-polarmem-forwarded"
FORWARD_SECRET_FILE = "forward-secret"
# Answered by the primary: every write, the engine's scores, and the store-wide backup.
FORWARDED_METHODS = frozenset(
    {
        "CreateNamespace",
        "UpdateNamespace",
        "DeleteNamespace",
        "Remember",
        "RememberStream",
        "Observe",
        "Forget",
        "Calibrate",
        "ScoreConcepts",
        "Backup",
        "UpdateItem",
        "ClearNamespace",
    }
)


# The forwarded methods that change nothing: no catch-up before their answer.
NOT_WRITES = frozenset({"ScoreConcepts", "Backup"})


class ForwardedStatus(errors.PolarMemError):
    """The primary's answer to a forwarded call that failed: its status code and message, passed
    on to the client as they are."""

    def __init__(self, code: grpc.StatusCode, message: str) -> None:
        super().__init__(message)
        self.status = code.name


def _forwardable(metadata, secret: str) -> list[tuple[str, str | bytes]]:
    """The caller's metadata minus what gRPC sets per hop (pseudo-headers, grpc-*, user-agent)
    and any forwarding mark the caller sent, plus the group's own mark."""
    kept: list[tuple[str, str | bytes]] = [
        (key, value)
        for key, value in metadata or ()
        if not key.startswith(":") and not key.startswith("grpc-") and key not in ("user-agent", FORWARDED_HEADER)
    ]
    kept.append((FORWARDED_HEADER, secret))
    return kept


def forwarded_by_replica(metadata, secret: str) -> bool:
    """Whether a call the primary answers came from one of its replicas (the group's mark)."""
    return any(key == FORWARDED_HEADER and value == secret for key, value in metadata or ())


def replica_handler(
    service, primary: grpc.Channel, secret: str, catch_up: Callable[[], object]
) -> grpc.GenericRpcHandler:
    """Every MemoryService method of a replica: reads by its own servicer, FORWARDED_METHODS by
    the primary over `primary`, marked with the group's `secret`; after a write the primary
    acknowledged, `catch_up` (the follower's poll) before the answer, so the connection reads its
    own write. (The generated add_MemoryServiceServicer_to_server would register the servicer's
    methods ahead of any generic handler, so the replica registers this instead.)"""
    table = {}
    for method in SERVICE.methods:
        request_type = getattr(memory_service_pb2, method.input_type.name)
        response_type = getattr(memory_service_pb2, method.output_type.name)
        serializers = dict(
            request_deserializer=request_type.FromString, response_serializer=response_type.SerializeToString
        )
        path = f"/{SERVICE.full_name}/{method.name}"
        if method.name not in FORWARDED_METHODS:
            call = primary.unary_unary(
                path, request_serializer=request_type.SerializeToString, response_deserializer=response_type.FromString
            )
            read = _read_or_forward(getattr(service, method.name), _forwarder(call, method.name, secret, catch_up))
            table[method.name] = grpc.unary_unary_rpc_method_handler(read, **serializers)
            continue
        after = None if method.name in NOT_WRITES else catch_up
        if method.client_streaming:
            stream_call = primary.stream_unary(
                path, request_serializer=request_type.SerializeToString, response_deserializer=response_type.FromString
            )
            table[method.name] = grpc.stream_unary_rpc_method_handler(
                _forwarder(stream_call, method.name, secret, after), **serializers
            )
        else:
            call = primary.unary_unary(
                path, request_serializer=request_type.SerializeToString, response_deserializer=response_type.FromString
            )
            table[method.name] = grpc.unary_unary_rpc_method_handler(
                _forwarder(call, method.name, secret, after), **serializers
            )
    return grpc.method_handlers_generic_handler(SERVICE.full_name, table)


def _read_or_forward(read, forward):
    """A read the replica answers itself, or hands to the primary where it must first learn a
    name new to an open vocabulary (a phrase a Recall, GetConcept or ListItems names: a write,
    which only the primary makes); the replica then catches up, so the next read here knows it."""

    def answer(request, context):
        try:
            return read(request, context)
        except errors.LearnedByPrimary:
            return forward(request, context)

    return answer


def _forwarder(call, name: str, secret: str, catch_up: Callable[[], object] | None):
    def forward(request, context):
        try:
            metadata = _forwardable(context.invocation_metadata(), secret)
            # no deadline of the caller's: none here either (the primary applies its default)
            response = call(request, timeout=client_remaining_s(context), metadata=metadata)
        except grpc.RpcError as exc:
            raise ForwardedStatus(exc.code(), exc.details() or "") from None
        if catch_up is not None:
            try:
                catch_up()
            except Exception:  # noqa: BLE001 - the write is stored: answer it; the refresh retries
                log.exception("catching up after a forwarded %s failed; the refresh daemon retries", name)
        return response

    return forward


class Refresher:
    """A replica's refresh (the daemon "polarmem-replica-refresh", every REPLICA_POLL_S): follows
    the primary's writes (library/replica.py ReplicaFollower) and stops the process (SIGTERM to
    itself) when the primary is gone."""

    def __init__(self, follower: ReplicaFollower, group_dir: Path, primary_pid: int) -> None:
        self.follower, self.group_dir, self.primary_pid = follower, group_dir, primary_pid
        self.primary_gone = False

    def pass_once(self) -> None:
        if self.primary_gone:  # once: the server's stop then ends the daemon
            return
        if os.getppid() != self.primary_pid:
            self.primary_gone = True
            log.error("the primary process %d is gone; stopping this replica", self.primary_pid)
            # The primary cannot remove the group's directory any more; every replica stops too.
            shutil.rmtree(self.group_dir, ignore_errors=True)
            os.kill(os.getpid(), signal.SIGTERM)
            return
        self.follower.poll_once()


@dataclasses.dataclass
class ReplicaRole:
    """What a replica process needs to know about its group."""

    index: int
    directory: Path
    primary_pid: int

    @property
    def board(self) -> Any:
        return change_board(self.directory / "board")

    @property
    def forward_secret(self) -> str:
        return (self.directory / FORWARD_SECRET_FILE).read_text()

    @property
    def secondary_dir(self) -> Path:
        return self.directory / f"secondary-{self.index}"

    @property
    def primary_target(self) -> str:
        return f"unix:{self.directory / 'primary.sock'}"


class ProcessGroup:
    """The primary's side: forks the replicas (before any gRPC object exists), tells them the
    port once the primary serves, and stops them."""

    def __init__(self, processes: int) -> None:
        self.processes = processes
        # 0700: the forwarding socket accepts writes, this user only; marked with our pid so the
        # next start removes it if this process is SIGKILLed (temp_dirs.py)
        self.directory = owned_temp_dir("polarmem-processes-")
        self.stopping = False
        self._lock = threading.Lock()  # children and stopping, shared with the supervisor's thread
        self.board = change_board(self.directory / "board")
        self.primary_socket = f"unix:{self.directory / 'primary.sock'}"
        # in the group's 0700 directory, where replicas started again (replica_main.py) read it too
        self.forward_secret = secrets.token_hex(16)
        secret_file = self.directory / FORWARD_SECRET_FILE
        secret_file.touch(mode=0o600)
        secret_file.write_text(self.forward_secret)
        self.children: list[tuple[int, int]] = []  # (pid, write end of its start pipe)

    def fork_replicas(self, config: ServerConfig, serve_replica) -> None:
        """Forks processes - 1 replicas. Each waits for the port (released with release())
        and then runs ``serve_replica(config, role)``; it exits when that returns, or at
        once if the primary closes the pipe without a port (its start failed)."""
        primary_pid = os.getpid()
        for index in range(1, self.processes):
            read_end, write_end = os.pipe()
            pid = os.fork()
            if pid == 0:  # the replica
                os.close(write_end)
                for _, other in self.children:
                    os.close(other)
                code = 1
                try:
                    port = _read_port(read_end)
                    if port is None:
                        code = 0
                    else:
                        code = serve_replica(
                            replica_config(config, index, port), ReplicaRole(index, self.directory, primary_pid)
                        )
                except BaseException:  # noqa: BLE001 - a replica must never return into the primary's code
                    log.exception("replica %d failed", index)
                finally:
                    logging.shutdown()
                    os._exit(code)
            os.close(read_end)
            self.children.append((pid, write_end))

    def release(self, port: int) -> None:
        """Lets the replicas start, on `port`."""
        for _, write_end in self.children:
            try:
                os.write(write_end, f"{port}\n".encode())
            except OSError:  # that replica is already gone
                pass
            os.close(write_end)
        self.children = [(pid, -1) for pid, _ in self.children]

    def replace(self, old_pid: int, new_pid: int) -> bool:
        """Records a restarted replica (replica_supervisor.py); False once the group is stopping."""
        with self._lock:
            if self.stopping:
                return False
            self.children = [(new_pid if pid == old_pid else pid, end) for pid, end in self.children]
            return True

    def signal_stop(self) -> None:
        """SIGTERM to every replica (they drain as a single server does); a replica still
        waiting for its port sees its pipe close and exits."""
        with self._lock:
            self.stopping = True
        for pid, write_end in self.children:
            if write_end >= 0:
                os.close(write_end)
            try:
                os.kill(pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        self.children = [(pid, -1) for pid, _ in self.children]

    def forward_signal(self, signum: int) -> None:
        """Passes a signal (SIGHUP: re-read the tokens file) on to every replica."""
        for pid, _ in self.children:
            try:
                os.kill(pid, signum)
            except ProcessLookupError:
                pass

    def wait(self, timeout_s: float) -> None:
        """Reaps the replicas; any still running after timeout_s is killed. Removes the directory."""
        deadline = time.monotonic() + timeout_s
        for pid, _ in self.children:
            while True:
                try:
                    done, _ = os.waitpid(pid, os.WNOHANG)
                except ChildProcessError:
                    break
                if done:
                    break
                if time.monotonic() > deadline:
                    log.error("replica %d did not stop in time; killing it", pid)
                    os.kill(pid, signal.SIGKILL)
                    os.waitpid(pid, 0)
                    break
                time.sleep(0.05)
        self.children = []
        shutil.rmtree(self.directory, ignore_errors=True)

    @property
    def pids(self) -> list[int]:
        return [pid for pid, _ in self.children]


def _read_port(read_end: int) -> int | None:
    data = b""
    while not data.endswith(b"\n"):
        chunk = os.read(read_end, 64)
        if not chunk:
            return None
        data += chunk
    os.close(read_end)
    return int(data)


def replica_config(config: ServerConfig, index: int, port: int) -> ServerConfig:
    """The server's configuration as replica `index` on the shared `port` runs it."""
    host = config.address.rsplit(":", 1)[0]
    metrics_port = config.metrics_port + index if config.metrics_port > 0 else config.metrics_port
    # No scoring engine in a replica: ScoreConcepts and server-side verification are forwarded.
    return dataclasses.replace(config, address=f"{host}:{port}", metrics_port=metrics_port, engine="")


def open_replica_memory(config: ServerConfig, role: ReplicaRole) -> tuple[ReplicaMemory, ReplicaFollower]:
    """The replica's memory and what keeps it in step with the primary (library/replica.py)."""
    return open_replica(config.data_dir, role.secondary_dir, config.index_threads, role.board)


__all__ = [
    "FORWARDED_METHODS",
    "NOT_WRITES",
    "REPLICA_POLL_S",
    "ForwardedStatus",
    "ProcessGroup",
    "Refresher",
    "ReplicaFollower",
    "ReplicaMemory",
    "ReplicaRole",
    "open_replica_memory",
    "replica_config",
    "replica_handler",
]
