"""The gRPC server: MemoryService behind one interceptor (authentication, request checks,
status codes, metrics, draining), grpc.health.v1, server reflection, Prometheus /metrics,
optional TLS and bearer tokens, and a graceful shutdown on SIGTERM / SIGINT.

Life cycle: the port opens first with health NOT_SERVING while the store is opened and every
index rebuilt; then SERVING. On shutdown: NOT_SERVING, no new calls (UNAVAILABLE), in-flight
calls get `grace_s` to finish, then RocksDB is synced and closed; whatever state the store is in,
the process ends within grace_s + STOP_BUDGET_S. SIGHUP re-reads the tokens file.

Faults (docs/failure-behaviour.md): a request that does not parse answers INVALID_ARGUMENT (the
interceptor's deserializer), never INTERNAL; a write that fails for disk space or I/O answers
RESOURCE_EXHAUSTED / UNAVAILABLE, health's ``polarmem.v1.MemoryService.writes`` turns
NOT_SERVING (reads keep working, so the server's own health stays SERVING) and a watchdog
reopens the store until writes work again. A configuration or environment error at start-up is
one line naming the setting and the fix (config.ConfigError), after everything already opened is
closed again.

With ``processes`` > 1 the started process is the primary and forks read-only replicas onto the
same port before any gRPC object exists (api/processes.py); ``serve_replica`` runs each.

Who listens on the address (setting ``front``): by default the compiled front (api/fast_front.py,
cpp/front), which plans and answers Recalls from the core and hands every other call —
any method, unary or streaming — to this server's Python listener over a private Unix socket. It
starts before the store opens (health answers NOT_SERVING through it meanwhile), follows the
memory's writes once it is open, and stops first on shutdown (its handed-over calls need this
server). With several processes each runs its own front on the shared port. Where it was not
built, or with the Milvus backend, the Python listener takes the address itself; its servicer
answers each Recall through the same core entry (library/core_recall.py), as it answers those the
front hands over.
"""

from __future__ import annotations

import errno
import json
import logging
import os
import shutil
import signal
import socket
import ssl
import tempfile
import threading
import time
from concurrent import futures
from pathlib import Path
from wsgiref.simple_server import WSGIServer

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection
from prometheus_client import Counter, Gauge, start_http_server
from prometheus_client.core import GaugeMetricFamily

from polarmem.common.v1 import enums_pb2
from polarmem.v1 import memory_service_pb2, memory_service_pb2_grpc
from polarmem_server import _core, errors
from polarmem_server.api.auth import Authorizer
from polarmem_server.api.config import ConfigError, DamagedStoreRefusal, ServerConfig, split_address
from polarmem_server.library import KEEP_VIEWS_INTERVAL_S, CoreRecall
from polarmem_server.api.fast_front import FastFrontCollector, FastFrontHost, caller_peer, unavailable_reason
from polarmem_server.api.processes import (
    REPLICA_POLL_S,
    ProcessGroup,
    Refresher,
    ReplicaRole,
    forwarded_by_replica,
    open_replica_memory,
    replica_handler,
)
from polarmem_server.api.status import Overloaded, Unavailable, public_message, status_for
from polarmem_server.api.replica_supervisor import WATCH_INTERVAL_S, ReplicaSupervisor
from polarmem_server.api.storage_damage import StorageDamage
from polarmem_server.api.temp_dirs import owned_temp_dir, remove_stale
from polarmem_server.library import AutoCreate, Daemons, Memory, open_primary
from polarmem_server.api.metrics import ServerMetrics, StoreWritesCollector
from polarmem_server.api.service import MemoryService
from polarmem_server.scoring.encoder import EncoderUnavailable, load_encoder
from polarmem_server.scoring.verification import Verifier
from polarmem_server.storage.errors import StoreDamaged, StoreError, StoreLocked, corruption_text
from polarmem_server.storage import opening

log = logging.getLogger("polarmem.server")
access_log = logging.getLogger("polarmem.access")  # one JSON line per RPC when access_log is on
SERVICE_NAME = memory_service_pb2.DESCRIPTOR.services_by_name["MemoryService"].full_name
WRITES_HEALTH_NAME = f"{SERVICE_NAME}.writes"  # NOT_SERVING while writes cannot succeed (disk full, I/O error)
STORAGE_HEALTH_NAME = (
    f"{SERVICE_NAME}.storage"  # NOT_SERVING once a read found a damaged store file (api/storage_damage.py)
)
ADMISSION_HEADROOM = 16  # threads beyond max_concurrent_rpcs, to refuse excess calls without queueing
# Status messages travel in trailers: a quoted 100 KB id must not overflow them. The core's cut,
# which its refusals get (cpp/include/polarmem/request_checks.hpp).
MAX_STATUS_MESSAGE_CHARS = _core.MAX_STATUS_MESSAGE_CHARS
STOP_BUDGET_S = 5.0  # beyond grace_s, for syncing and closing the store; then the process exits regardless
WATCHDOG_INTERVAL_S = 1.0
# Bounds checked before a handler runs: past them the core would try to allocate the number.
MAX_SPACE_DIM = 65_536


class HealthServicer(health.HealthServicer):
    """grpc_health's servicer with a Watch's close handled off the server's event thread. The
    stock close callback takes the servicer's lock on that thread, while a new Watch holds the
    lock and waits for that same thread to complete its first send: both wait for ever, and the
    server stops answering. Opening and cancelling watches quickly hit it once in ~50–190 watches
    (tests/integration/test_one_address.py)."""

    def _on_close_callback(self, send_response_callback, service):
        close = super()._on_close_callback(send_response_callback, service)
        return lambda: threading.Thread(target=close, name="polarmem-health-close", daemon=True).start()


def code_for(exc: BaseException) -> grpc.StatusCode:
    """The status of an exception: a PolarMemError names its own; the rest go through
    api.status's table."""
    if isinstance(exc, errors.PolarMemError) and exc.status != "INTERNAL":
        return getattr(grpc.StatusCode, exc.status, grpc.StatusCode.INTERNAL)
    return status_for(exc)


def cut_message(message: str) -> str:
    return message if len(message) <= MAX_STATUS_MESSAGE_CHARS else message[:MAX_STATUS_MESSAGE_CHARS] + "…"


class MalformedRequest:
    """What the interceptor's deserializer returns for bytes that are not a valid request (the
    handler is then not called; the client gets INVALID_ARGUMENT)."""

    __slots__ = ("reason",)

    def __init__(self, reason: str) -> None:
        self.reason = reason


def tolerant_deserializer(deserialize, type_name: str):
    """gRPC answers a deserializer's exception with INTERNAL ("Exception deserializing
    request!"); this one hands the handler a MalformedRequest instead."""

    def parse(data: bytes):
        try:
            return deserialize(data)
        except Exception as exc:  # noqa: BLE001 - any parse failure is the caller's malformed message
            return MalformedRequest(
                f"the request is not a valid {type_name} ({cut_message(str(exc))[:120]}); "
                "send a message encoded from polarmem/v1/memory_service.proto (string fields "
                "must be UTF-8)"
            )

    return parse


def _checked(request):
    if isinstance(request, MalformedRequest):
        raise errors.InvalidArgument(request.reason)
    return request


def _checked_stream(request_iterator):
    for request in request_iterator:
        yield _checked(request)


def check_limits(method: str, request) -> None:
    """Numbers the handlers would pass on to an allocation: refused here with the bound. (A
    Recall's are the core's to refuse, before it allocates: cpp/front/namespace_view.cpp.)"""
    if method == "CreateNamespace":
        for i, space in enumerate(request.config.spaces):
            if space.dim > MAX_SPACE_DIM:
                raise errors.InvalidArgument(f"config.spaces[{i}].dim must be <= {MAX_SPACE_DIM}, got {space.dim}")


def _namespace_of(request, stream: bool) -> str:
    if stream or isinstance(request, MalformedRequest):
        return ""
    return getattr(request, "namespace", "") or getattr(request, "name", "")


class ErrorsAndMetricsInterceptor(grpc.ServerInterceptor):
    """Every MemoryService call: parse tolerantly, refuse while starting or draining,
    authenticate and check the token's role (before a stream's first message), check bounds,
    count and time it, and turn exceptions into status codes (INTERNAL is logged with its
    traceback and counted; the client gets a generic message)."""

    def __init__(
        self, metrics: ServerMetrics, server: PolarMemServer, max_concurrent: int, authorizer: Authorizer | None = None
    ) -> None:
        self._metrics = metrics
        self._server = server
        self._authorizer = authorizer or Authorizer()
        # Admission is counted here, from handler entry to handler exit, so a slot is free before
        # the response leaves: a client that sends its next call the moment it has the last
        # answer always finds it free. (gRPC's own limit frees a slot only after it has processed
        # the sent status, which a fast client can beat: at load == limit it refused the odd call.)
        self._admission = threading.BoundedSemaphore(max_concurrent)
        self._max_concurrent = max_concurrent
        self._wrapped: dict[str, grpc.RpcMethodHandler] = {}  # built once per method, not per call

    def intercept_service(self, continuation, handler_call_details):
        wrapped = self._wrapped.get(handler_call_details.method)
        if wrapped is not None:
            return wrapped
        handler = continuation(handler_call_details)
        if handler is None or not handler_call_details.method.startswith(f"/{SERVICE_NAME}/"):
            return handler
        method = handler_call_details.method.rsplit("/", 1)[-1]
        request_type = (
            memory_service_pb2.DESCRIPTOR.services_by_name["MemoryService"].methods_by_name[method].input_type
        )
        deserializer = tolerant_deserializer(handler.request_deserializer, request_type.full_name)
        if handler.unary_unary is not None:
            wrapped = grpc.unary_unary_rpc_method_handler(
                self._wrap(handler.unary_unary, method, stream=False),
                request_deserializer=deserializer,
                response_serializer=handler.response_serializer,
            )
        elif handler.stream_unary is not None:
            wrapped = grpc.stream_unary_rpc_method_handler(
                self._wrap(handler.stream_unary, method, stream=True),
                request_deserializer=deserializer,
                response_serializer=handler.response_serializer,
            )
        else:
            return handler
        self._wrapped[handler_call_details.method] = wrapped
        return wrapped

    def _wrap(self, behaviour, method: str, stream: bool):
        metrics = self._metrics

        def handle(request, context):
            code = grpc.StatusCode.OK
            started = time.perf_counter()
            # A replica's forwarded call: the replica counts it as its client saw it (processes.py).
            group = self._server.group
            counted = group is None or not forwarded_by_replica(context.invocation_metadata(), group.forward_secret)
            admitted = self._admission.acquire(blocking=False)
            metrics.in_flight.inc()
            try:
                if not admitted:
                    raise Overloaded(
                        f"the server is handling {self._max_concurrent} calls (max_concurrent_rpcs); retry with backoff"
                    )
                if not self._server.accepting:
                    raise Unavailable("the server is starting or shutting down; retry shortly")
                self._authorizer.authorize_method(context, method)  # before any (stream) message is read
                if stream:
                    request = _checked_stream(request)
                else:
                    check_limits(method, _checked(request))
                return behaviour(request, context)
            except Exception as exc:  # noqa: BLE001 - every failure becomes a status code here
                damage = corruption_text(exc)
                if damage is not None:  # a damaged store file, not a bug: DATA_LOSS, counted and alerted
                    exc = self._server.storage_damage.report(method, _namespace_of(request, stream), damage)
                if isinstance(exc, grpc.RpcError) and not context.is_active():
                    # A stream's next message never came: the caller cancelled or ran out of time
                    # (grpcio raises a bare RpcError from the request iterator). Not a fault: no
                    # INTERNAL, no traceback, nothing for the internal-errors alert.
                    code = grpc.StatusCode.CANCELLED
                    if (context.time_remaining() or 0.0) <= 0.0:
                        code = grpc.StatusCode.DEADLINE_EXCEEDED
                    context.abort(code, "the caller cancelled the call or its deadline passed")
                code = code_for(exc)
                if code == grpc.StatusCode.INTERNAL:
                    if counted:
                        metrics.internal_errors.inc()
                    log.exception("internal error in %s", method)
                context.abort(code, cut_message(public_message(exc, code)))
            finally:
                if admitted:
                    self._admission.release()
                metrics.in_flight.dec()
                namespace = _namespace_of(request, stream)
                seconds = time.perf_counter() - started
                if counted:
                    metrics.observe_rpc(method, code.name, seconds, namespace=namespace)
                if self._server.config.access_log:
                    access_log.info(
                        json.dumps(
                            {
                                "method": method,
                                "namespace": namespace[:80],
                                "code": code.name,
                                "ms": round(seconds * 1000, 3),
                                "peer": caller_peer(context),
                            }
                        )
                    )

        return handle


class NamespaceTotalsCollector:
    """Item and namespace totals without namespace names: what the unauthenticated metrics port
    shows unless metrics_namespace_labels is on (then api.metrics.MemoryCollector's per-namespace
    series instead)."""

    def __init__(self, memory: Memory) -> None:
        self._memory = memory

    def collect(self):
        items = GaugeMetricFamily("polarmem_items", "Items stored, by kind (all namespaces)", labels=["kind"])
        concepts = GaugeMetricFamily("polarmem_concepts", "Concepts in the vocabularies (all namespaces)")
        edges = GaugeMetricFamily(
            "polarmem_edges", "Item-concept edges, by polarity (all namespaces)", labels=["polarity"]
        )
        namespaces = GaugeMetricFamily("polarmem_namespaces", "Namespaces")
        visual = text = count = concept_total = 0
        edge_totals: dict[str, int] = {}
        for namespace in self._memory.list_namespaces():
            try:
                counts = self._memory.namespace_counts(namespace.name)
            except LookupError:  # deleted since the listing
                continue
            visual += counts.kinds.get(enums_pb2.ITEM_KIND_VISUAL, 0)
            text += counts.kinds.get(enums_pb2.ITEM_KIND_TEXT, 0)
            concept_total += len(namespace.vocabulary)
            for polarity, by_concept in counts.concepts.items():
                edge_totals[polarity] = edge_totals.get(polarity, 0) + sum(by_concept.values())
            count += 1
        items.add_metric(["visual"], visual)
        items.add_metric(["text"], text)
        concepts.add_metric([], concept_total)
        for polarity, total in sorted(edge_totals.items()):
            edges.add_metric([polarity], total)
        namespaces.add_metric([], count)
        yield items
        yield concepts
        yield edges
        yield namespaces


class StoreMetrics:
    """Store recoveries and writability, on the server's registry (errors: ServerMetrics.count_store_error)."""

    def __init__(self, registry) -> None:
        self.recoveries = Counter(
            "polarmem_store_recoveries",
            "Store recoveries: reopen after a failed write (resume) or WAL repair at start-up",
            ["kind"],
            registry=registry,
        )
        self.writable = Gauge(
            "polarmem_store_writable", "1 while store writes succeed, 0 while they fail", registry=registry
        )
        self.writable.set(1)


def _port_in_use(address: str) -> bool:
    host, port = split_address(address)
    if not port.isdigit() or int(port) == 0:
        return False
    probe = socket.socket(socket.AF_INET6 if ":" in host.strip("[]") else socket.AF_INET, socket.SOCK_STREAM)
    # As gRPC binds: a connection this port's previous server closed first stays in TIME_WAIT for
    # a minute, no process holding it, and without SO_REUSEADDR a restart in that minute was
    # refused as "in use by another process". A listening socket still refuses the bind.
    probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        probe.bind((host.strip("[]") or "0.0.0.0", int(port)))
        return False
    except OSError as exc:
        return exc.errno == errno.EADDRINUSE
    finally:
        probe.close()


def check_tls(cert: str, key: str) -> tuple[bytes, bytes]:
    """(key, cert) bytes, or ConfigError naming the file and the fix: gRPC itself only says
    "Failed to bind" for a bad certificate or a key that does not match it."""
    for setting, path in (("tls_cert", cert), ("tls_key", key)):
        if not Path(path).is_file():
            raise ConfigError(f"setting {setting}: {path} does not exist or is not a file; fix the path")
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    try:
        context.load_cert_chain(cert, key)
    except ssl.SSLError as exc:
        reason = getattr(exc, "reason", "") or str(exc)
        if "KEY_VALUES_MISMATCH" in str(exc) or "mismatch" in str(reason).lower():
            raise ConfigError(
                f"setting tls_key: {key} is not the private key of the certificate {cert}; use the "
                "key the certificate was issued for"
            ) from None
        if "PEM" in str(exc) or "NO_START_LINE" in str(exc) or "CERT" in str(reason).upper():
            raise ConfigError(
                f"setting tls_cert / tls_key: {cert} or {key} is not a PEM certificate / private key "
                f"({reason}); give PEM files"
            ) from None
        raise ConfigError(f"setting tls_cert / tls_key: cannot load {cert} with {key} ({reason})") from None
    except OSError as exc:
        raise ConfigError(f"setting tls_cert / tls_key: cannot read {cert} / {key} ({exc.strerror})") from None
    return Path(key).read_bytes(), Path(cert).read_bytes()


BACKEND_PROBE_INTERVAL_S = 2.0


def open_milvus(cfg: ServerConfig):
    """The Milvus backend of --backend milvus; its settings' errors and an unreachable Milvus
    are one-line ConfigErrors naming the setting."""
    if cfg.milvus_ca_pem and not Path(cfg.milvus_ca_pem).is_file():
        raise ConfigError(f"setting milvus_ca_pem: {cfg.milvus_ca_pem} is not a readable file; give the PEM path")
    try:
        settings = cfg.milvus_settings()
    except errors.InvalidArgument as exc:
        setting = next(
            (f"milvus_{key}" for key in ("uri", "prefix", "timeout") if f"milvus {key}" in str(exc)), "backend"
        )
        raise ConfigError(f"setting {setting}: {exc}") from None
    try:
        return opening.open_milvus(settings)
    except ImportError as exc:
        raise ConfigError(
            f"setting backend: milvus needs pymilvus 2.3 ({exc}); pip install --no-deps -r requirements-milvus.txt"
        ) from None
    except (errors.Unavailable, errors.DeadlineExceeded) as exc:
        raise ConfigError(f"setting milvus_uri: {exc}") from None


def serve_replica(config: ServerConfig, role: ReplicaRole) -> int:
    """A replica process's whole life (ProcessGroup.fork_replicas calls it after the fork)."""
    server = PolarMemServer(config, replica=role).start()
    server.serve_forever()
    return 0


class PolarMemServer:
    def __init__(self, config: ServerConfig, replica: ReplicaRole | None = None) -> None:
        """`replica`: this process is a read-only replica of a multi-process server (set by
        serve_replica only); None: a single server, or the primary when config.processes > 1."""
        self.config = config.validate()
        self.replica = replica
        self.group: ProcessGroup | None = None
        self.supervisor: ReplicaSupervisor | None = None  # restarts dead replicas (primary of a group)
        self.refresher: Refresher | None = None
        # the scrub, the watchdogs, the replica refresh and the supervisor (library/daemons.py)
        self.daemons = Daemons()
        self.metrics = ServerMetrics(namespace_labels=self.config.metrics_namespace_labels)
        self.memory: Memory | None = None
        self.accepting = False
        self.port = 0
        self.metrics_port = 0
        self._grpc: grpc.Server | None = None
        self._health = HealthServicer()
        self._metrics_httpd: WSGIServer | None = None
        self._stopped = threading.Event()
        self._stop_lock = threading.Lock()
        self.verifier: Verifier | None = None
        self.authorizer = Authorizer()
        self.store_metrics = StoreMetrics(self.metrics.registry)
        self.storage_damage = StorageDamage(
            config.data_dir,
            lambda where: self.metrics.storage_corruption.labels("scrub" if where == "scrub" else "rpc").inc(),
            lambda: self._health.set(STORAGE_HEALTH_NAME, health_pb2.HealthCheckResponse.NOT_SERVING),
        )
        self.fast_front: FastFrontHost | None = None  # the compiled front, when it listens on the address
        self.core_recall: CoreRecall | None = None  # the one core entry for Recall, where it was built
        self._front_dir: str | None = None  # the private Unix socket the front hands calls over
        self._python_listener_reason = ""  # why front=auto left the address to the Python listener

    @property
    def address(self) -> str:
        host = self.config.address.rsplit(":", 1)[0]
        return f"{host}:{self.port}"

    @property
    def metrics_summary(self) -> str:
        """One true phrase for start-up lines: "metrics on port N" or "metrics off" (issue 53:
        `--metrics-port -1` printed both "metrics on off" and "metrics on port 0")."""
        return f"metrics on port {self.metrics_port}" if self.config.metrics_port >= 0 else "metrics off"

    @property
    def library_address(self) -> str:
        """Where the Python listener answers: the address itself, or (the compiled front on the
        address) the private socket the front hands calls over. For tests and diagnostics."""
        return f"unix:{self._front_dir}/upstream.sock" if self.fast_front is not None else self.address

    def start(self) -> PolarMemServer:
        """Open everything and serve. A configuration or environment error closes what was
        opened and raises ConfigError (one line naming the setting and the fix)."""
        try:
            return self._start()
        except BaseException as exc:
            self._abandon_start()
            if isinstance(exc, ConfigError):
                raise
            if isinstance(exc, StoreDamaged):
                raise DamagedStoreRefusal(f"setting data_dir: {exc}") from None
            if isinstance(exc, StoreLocked):
                raise ConfigError(f"setting data_dir: {exc}") from None
            if isinstance(exc, StoreError):
                raise ConfigError(f"setting data_dir: {exc}") from None
            if isinstance(exc, PermissionError):
                raise ConfigError(
                    f"permission denied on {exc.filename or exc}: run as a user who may use it, or "
                    "change the setting that names it"
                ) from None
            raise

    def _start(self) -> PolarMemServer:
        cfg = self.config
        logging.basicConfig(level=cfg.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")
        if cfg.tokens_file:
            try:
                self.authorizer = Authorizer(path=cfg.tokens_file)
            except errors.InvalidArgument as exc:
                raise ConfigError(str(exc)) from None
        tls = check_tls(cfg.tls_cert, cfg.tls_key) if cfg.tls_cert else None
        if self.replica is None:
            remove_stale()  # socket directories of servers that were SIGKILLed
        if cfg.processes > 1 and self.replica is None:
            # Before any gRPC object exists in this process (grpc's multiprocessing rule).
            self.group = ProcessGroup(cfg.processes)
            self.group.fork_replicas(cfg, serve_replica)
        if self.replica is not None:
            # A replica shares the port with processes already serving: it binds only once its
            # index is built, so the kernel never hands a connection to a replica not yet ready.
            self.memory, self._replica_follower = open_replica_memory(cfg, self.replica)
        # Every admitted call needs a thread, and a call beyond the limit needs one to be refused
        # promptly, so the pool is at least the limit plus headroom. gRPC's own cap stays as a
        # backstop at the pool size: beyond it nothing queues waiting for a thread.
        threads = max(cfg.workers, cfg.max_concurrent_rpcs + ADMISSION_HEADROOM)
        self._grpc = grpc.server(
            futures.ThreadPoolExecutor(max_workers=threads, thread_name_prefix="polarmem-rpc"),
            interceptors=[ErrorsAndMetricsInterceptor(self.metrics, self, cfg.max_concurrent_rpcs, self.authorizer)],
            options=[
                ("grpc.max_receive_message_length", cfg.max_message_bytes),
                ("grpc.max_send_message_length", cfg.max_message_bytes),
                ("grpc.so_reuseport", 1 if cfg.processes > 1 else 0),
            ],
            maximum_concurrent_rpcs=threads,
        )
        self.verifier = Verifier.from_config(cfg, on_batch=self.metrics.observe_batch)
        if self.verifier is not None:
            self.metrics.attach_engine(self.verifier)
        self._service = MemoryService(None, self.metrics, self.authorizer, cfg.default_deadline_s, self.verifier)
        self._service.backup_dir = cfg.backup_dir
        self._service.auto_create = AutoCreate(cfg.auto_create_namespaces, cfg.max_namespaces)
        if self.replica is not None:
            self._service.catch_up = self._replica_follower.catch_up_to
            primary = grpc.insecure_channel(
                self.replica.primary_target,  # forwarded messages: the same limits
                options=[
                    ("grpc.max_send_message_length", cfg.max_message_bytes),
                    ("grpc.max_receive_message_length", cfg.max_message_bytes),
                ],
            )
            self._grpc.add_generic_rpc_handlers(
                (
                    replica_handler(
                        self._service, primary, self.replica.forward_secret, self._replica_follower.poll_once
                    ),
                )
            )
        else:
            memory_service_pb2_grpc.add_MemoryServiceServicer_to_server(self._service, self._grpc)
        health_pb2_grpc.add_HealthServicer_to_server(self._health, self._grpc)
        reflection.enable_server_reflection((SERVICE_NAME, health.SERVICE_NAME, reflection.SERVICE_NAME), self._grpc)
        self._set_health(health_pb2.HealthCheckResponse.NOT_SERVING)
        self._health.set(WRITES_HEALTH_NAME, health_pb2.HealthCheckResponse.NOT_SERVING)
        if self.replica is None and _port_in_use(
            cfg.address
        ):  # checked first: gRPC's own bind failure logs a C-core line to stderr
            raise ConfigError(
                f"setting address: {cfg.address} is in use by another process; choose another "
                "host:port (port 0 picks a free one)"
            )
        front_on_address = self._front_on_address()
        if front_on_address:  # the library listens privately; the compiled front on the address
            self._listen_for_front(self._grpc)
        else:
            try:
                if tls is not None:
                    self.port = self._grpc.add_secure_port(cfg.address, grpc.ssl_server_credentials([tls]))
                else:
                    self.port = self._grpc.add_insecure_port(cfg.address)
            except RuntimeError:
                self.port = 0
        bound = front_on_address or self.port != 0  # (the front binds the address once this server runs)
        if bound and self.group is not None and self._grpc.add_insecure_port(self.group.primary_socket) == 0:
            raise ConfigError(
                f"cannot listen on {self.group.primary_socket} for the replicas' writes; check that "
                f"{self.group.directory} is writable"
            )
        self._grpc.start()
        if front_on_address:  # at once: health answers NOT_SERVING there while the store opens
            self.port = self._start_front(cfg.address)
        if self.port == 0:
            why = (
                "is in use by another process"
                if _port_in_use(cfg.address)
                else "cannot be bound (not an address of this machine?)"
            )
            raise ConfigError(
                f"setting address: {cfg.address} {why}; choose another host:port (port 0 picks a free one)"
            )
        if cfg.metrics_port >= 0:
            try:
                self._metrics_httpd, _ = start_http_server(
                    cfg.metrics_port, cfg.metrics_address, registry=self.metrics.registry
                )
            except OSError as exc:
                why = (
                    "is in use by another process"
                    if exc.errno == errno.EADDRINUSE
                    else f"cannot be bound ({exc.strerror})"
                )
                raise ConfigError(
                    f"setting metrics_port: {cfg.metrics_address}:{cfg.metrics_port} {why}; choose "
                    "another port (0 picks a free one, -1 turns metrics off)"
                ) from None
            self.metrics_port = self._metrics_httpd.server_port
        if cfg.recover == "point-in-time" and self.replica is None:
            self._repair_at_start()
        # The port answers health checks (NOT_SERVING) while the indexes are rebuilt.
        if cfg.backend == "milvus":
            self.memory = Memory(open_milvus(cfg), verifier=self.verifier)
            self._watch_backend(self.memory.backend)
        elif self.replica is None:  # (a replica opened its memory before binding the port)
            if self.group is not None:
                self.memory = open_primary(
                    cfg.data_dir,
                    self.group.board,
                    cfg.durability,
                    cfg.index_threads,
                    verifier=self.verifier,
                    graph_checkpoint_s=cfg.graph_checkpoint_s,
                )
            else:
                self.memory = Memory(
                    cfg.data_dir,
                    durability=cfg.durability,
                    threads=cfg.index_threads,
                    verifier=self.verifier,
                    graph_checkpoint_s=cfg.graph_checkpoint_s,
                )
        memory = self.memory
        assert memory is not None, "every branch above opens the memory (a replica's before it binds the port)"
        self._watch_writes(memory.backend)
        self._service.memory = memory
        if cfg.metrics_namespace_labels:
            self.metrics.attach(memory)
        else:
            self.metrics.registry.register(NamespaceTotalsCollector(memory))
        self.metrics.registry.register(StoreWritesCollector(memory))
        if self.core_recall is not None:
            self.core_recall.attach(memory)  # the front's views answer the memory's Recalls too
        self.core_recall = memory.core
        if cfg.core_views == "eager":
            # views of every namespace, made again after each write that drops one (library/core_recall.py)
            self.daemons.start(
                "polarmem-core-views",
                KEEP_VIEWS_INTERVAL_S,
                memory.core.keep_views,
                failure_backoff_s=1.0,
            )
        self._service.fast_front = self.fast_front
        self.metrics.rebuild_seconds.set(memory.rebuild_seconds)
        self.metrics.rebuild_items.set(memory.rebuild_items)
        log.info(
            "rebuilt %d items in %.2f s (%.0f items/s)",
            memory.rebuild_items,
            memory.rebuild_seconds,
            memory.rebuild_items / max(memory.rebuild_seconds, 1e-9),
        )
        self._load_encoders(memory)  # before SERVING: a first call must not wait seconds for a model
        self.accepting = True
        self._set_health(health_pb2.HealthCheckResponse.SERVING)
        self._health.set(WRITES_HEALTH_NAME, health_pb2.HealthCheckResponse.SERVING)
        self._health.set(STORAGE_HEALTH_NAME, health_pb2.HealthCheckResponse.SERVING)
        if self.replica is not None:
            self.refresher = Refresher(self._replica_follower, self.replica.directory, self.replica.primary_pid)
            self.daemons.start(
                "polarmem-replica-refresh",
                REPLICA_POLL_S,
                self.refresher.pass_once,
                failure_level=logging.ERROR,
                failure_backoff_s=1.0,
                stop_timeout_s=STOP_BUDGET_S / 2,  # a poll in progress reads the store it closes next
            )
            log.info("replica %d serving on %s (%s)", self.replica.index, self.address, self.metrics_summary)
            return self
        if cfg.scrub_interval_s > 0 and cfg.backend == "local":  # Backend.scrub: Milvus checks its own
            scrub_stopping = threading.Event()  # a scrub in progress ends at its next pause once set
            self.daemons.start(
                "polarmem-scrub",
                cfg.scrub_interval_s,
                lambda: self._scrub_pass(memory.backend, scrub_stopping),
                stopping=scrub_stopping,
                stop_timeout_s=0,  # stopping does not wait for it
            )
        if self.group is not None:
            self.group.release(self.port)
            self.supervisor = ReplicaSupervisor(
                self.group, cfg, self.port, self.metrics.replica_restarts.inc, self.metrics.replicas_up.set
            ).start()
            self.daemons.start(
                "polarmem-replica-supervisor",
                WATCH_INTERVAL_S,
                self.supervisor.pass_once,
                failure_level=logging.ERROR,  # the watcher outlives one bad round
                stop_timeout_s=5,
            )
        if self._python_listener_reason:
            log.info("the Python listener serves the address: %s", self._python_listener_reason)
        log.info("serving on %s (%s)", self.address, self.metrics_summary)
        return self

    def _scrub_pass(self, backend, stopping: threading.Event) -> None:
        """One scrub of the store (Backend.scrub); each damaged file found is reported as a read's is."""
        started = time.monotonic()
        scrubbed = backend.scrub(stopping)
        if scrubbed is None:
            return
        keys, found = scrubbed
        for text in found:
            self.storage_damage.report("scrub", "", text)
        log.info(
            "store scrub read %d keys in %.1f s: %s",
            keys,
            time.monotonic() - started,
            f"{len(found)} damaged file(s)" if found else "no damage",
        )

    def _front_on_address(self) -> bool:
        """Whether the compiled front listens on the address (setting ``front``): "auto" where it
        was built and serves this server (the local backend; each process of a group has its own)."""
        cfg = self.config
        if cfg.front == "python":
            return False
        if cfg.backend != "local":  # config.validate() refuses it with "compiled"
            return False
        reason = unavailable_reason()
        if reason is None:
            return True
        if cfg.front == "compiled":
            raise ConfigError(f"setting front: {reason}")
        self._python_listener_reason = reason  # logged once the server serves (start-up errors stay one line)
        return False

    def _listen_for_front(self, server: grpc.Server) -> None:
        """The private Unix socket (a fresh 0700 directory) over which the compiled front hands
        this server the calls it does not answer; added before the server starts."""
        self._front_dir = str(owned_temp_dir("polarmem-front-"))
        if server.add_insecure_port(f"unix:{self._front_dir}/upstream.sock") == 0:
            raise ConfigError(
                f"cannot listen on {self._front_dir}/upstream.sock for the compiled front; check that "
                f"{tempfile.gettempdir()} is writable"
            )

    def _start_front(self, address: str) -> int:
        """Starts the compiled front on ``address``; returns its port (0: it could not bind)."""
        cfg = self.config
        try:
            self.core_recall = CoreRecall()
            self.fast_front = FastFrontHost(
                address,
                f"unix:{self._front_dir}/upstream.sock",
                self.core_recall,
                self.authorizer,
                cfg.tls_cert,
                cfg.tls_key,
                cfg.max_concurrent_rpcs,
                cfg.max_message_bytes,
                reuse_port=cfg.processes > 1,  # every process of the group serves the port
                namespace_labels=cfg.metrics_namespace_labels,
                # a replica's views trail the primary: its Strong Recalls, and those with a token
                # it has not applied yet, catch up in the servicer
                replica=self.replica is not None,
                applied_position=self._replica_follower.position if self.replica is not None else 0,
            )
        except ValueError:
            return 0  # the caller says why, as for the Python listener
        if self.replica is not None:
            self._replica_follower.on_position = self.fast_front.front.set_applied_position
            self.fast_front.front.set_applied_position(self._replica_follower.position)  # (a poll since)
        self.metrics.registry.register(FastFrontCollector(self.fast_front))
        self.metrics.attach_front(self.fast_front.front.stats)
        return self.fast_front.port

    def _stop_front(self, grace_s: float) -> None:
        """Stops the front first (its handed-over calls need this server), then its socket."""
        if self.fast_front is not None:
            self.fast_front.shutdown(grace_s)
        if self._front_dir is not None:
            shutil.rmtree(self._front_dir, ignore_errors=True)

    def _load_encoders(self, memory: Memory) -> None:
        """The text encoders the stored namespaces use, loaded while health says NOT_SERVING."""
        for name in sorted({ns.settings.encoder for ns in memory.list_namespaces()} - {"", "none"}):
            try:
                load_encoder(name)
            except EncoderUnavailable as exc:  # text recall on those namespaces answers FAILED_PRECONDITION
                log.warning("encoder %r is not available here: %s", name, exc)

    def _repair_at_start(self) -> None:
        report = opening.recover_local_wal(self.config.data_dir)
        if report.damaged:
            for line in report.lines():
                log.warning("recover=point-in-time: %s", line)
            self.store_metrics.recoveries.labels("wal_repair").inc()

    def _watch_writes(self, backend) -> None:
        """Write failures the backend reports (Backend.watch_writes: the local store's) flip the
        writes health and the gauge; a watchdog tries to resume writes (Backend.resume_writes: the
        store reopens) until they work again, so health recovers without a write."""

        def failed(kind: str) -> None:
            self.metrics.count_store_error("write", kind)
            self.store_metrics.writable.set(0)
            self._health.set(WRITES_HEALTH_NAME, health_pb2.HealthCheckResponse.NOT_SERVING)

        def resumed() -> None:
            self.store_metrics.recoveries.labels("resume").inc()
            self.store_metrics.writable.set(1)
            if self.accepting:
                self._health.set(WRITES_HEALTH_NAME, health_pb2.HealthCheckResponse.SERVING)

        if not backend.watch_writes(failed, resumed):
            return

        def watch() -> None:
            if self.accepting:
                backend.resume_writes()

        self.daemons.start("polarmem-store-watchdog", WATCHDOG_INTERVAL_S, watch)

    def _watch_backend(self, backend) -> None:
        """A shared backend (Milvus) can go away and come back: health follows it (NOT_SERVING
        while Backend.reachable() fails, SERVING again when it answers), without a restart."""

        serving = True

        def watch() -> None:
            nonlocal serving
            if not self.accepting:
                return
            up = backend.reachable()
            if up != serving:
                serving = up
                status = health_pb2.HealthCheckResponse.SERVING if up else health_pb2.HealthCheckResponse.NOT_SERVING
                log.warning(
                    "storage backend %s: health %s",
                    "reachable again" if up else "unreachable",
                    health_pb2.HealthCheckResponse.ServingStatus.Name(status),
                )
                if self.accepting:
                    self._set_health(status)
                    self._health.set(WRITES_HEALTH_NAME, status)

        # stop_timeout_s 0: a probe in flight (up to 3 s) must not eat the shutdown's budget; once
        # not accepting, a pass does nothing
        self.daemons.start("polarmem-backend-watchdog", BACKEND_PROBE_INTERVAL_S, watch, stop_timeout_s=0)

    def _abandon_start(self) -> None:
        """Closes what a failed start opened (ports, threads, store), quietly."""
        self.accepting = False
        self._stopped.set()
        for step in (
            self.daemons.stop_all,
            lambda: self._stop_front(0),
            lambda: self.group is not None and (self.group.signal_stop(), self.group.wait(STOP_BUDGET_S)),
            lambda: self._grpc is not None and self._grpc.stop(0).wait(),
            lambda: (
                self._metrics_httpd is not None and (self._metrics_httpd.shutdown(), self._metrics_httpd.server_close())
            ),
            lambda: self.verifier is not None and self.verifier.close(),
            lambda: self.memory is not None and self.memory.close(),
        ):
            try:
                step()
            except Exception:  # noqa: BLE001 - the start-up error is what the operator needs
                log.debug("cleaning up a failed start", exc_info=True)

    def _set_health(self, status) -> None:
        for name in ("", SERVICE_NAME):
            self._health.set(name, status)

    def stop(self, grace_s: float | None = None) -> None:
        """Drain and close; safe to call more than once and from a signal handler's thread. Every
        step runs whatever the previous one did (a store whose writes fail still closes)."""
        with self._stop_lock:
            if self._stopped.is_set():
                return
            try:
                grace = self.config.grace_s if grace_s is None else grace_s
                self.daemons.stop("polarmem-replica-supervisor")  # no restarts while the group stops
                self.daemons.stop("polarmem-scrub")
                if self.group is not None:  # the replicas drain alongside
                    self.group.signal_stop()
                self._set_health(health_pb2.HealthCheckResponse.NOT_SERVING)
                self._health.set(WRITES_HEALTH_NAME, health_pb2.HealthCheckResponse.NOT_SERVING)
                if self.config.drain_notice_s and self.accepting:
                    time.sleep(self.config.drain_notice_s)
                self.accepting = False
                steps = [
                    ("compiled front", lambda: self._stop_front(grace)),
                    ("gRPC", lambda: self._grpc is not None and self._grpc.stop(grace).wait()),
                    ("replica refresh", lambda: self.daemons.stop("polarmem-replica-refresh")),
                    (
                        "replicas",
                        lambda: (
                            self.group is not None
                            and self.group.wait(grace + self.config.drain_notice_s + STOP_BUDGET_S / 2)
                        ),
                    ),
                    ("scoring engine", lambda: self.verifier is not None and self.verifier.close()),
                    ("watchdogs", self.daemons.stop_all),
                    ("store sync", lambda: self.memory is not None and self.memory.flush()),
                    ("store", lambda: self.memory is not None and self.memory.close()),
                    (
                        "metrics",
                        lambda: (
                            self._metrics_httpd is not None
                            and (self._metrics_httpd.shutdown(), self._metrics_httpd.server_close())
                        ),
                    ),
                ]
                for name, step in steps:
                    try:
                        step()
                    except Exception:  # noqa: BLE001 - shutdown must finish; the log says what failed
                        log.exception("stopping: %s failed; continuing", name)
            finally:
                # Logged first: the main thread returns (and the process exits) once _stopped is set.
                log.info("stopped")
                self._stopped.set()

    def serve_forever(self) -> None:
        """Block until SIGTERM / SIGINT, then shut down gracefully: the process ends within
        grace_s + STOP_BUDGET_S even if closing hangs (then with status 1). SIGHUP re-reads the
        tokens file."""
        signalled = threading.Event()

        def on_signal(signum, _frame):
            log.info("signal %d: draining", signum)
            signalled.set()
            threading.Thread(target=self.stop, name="polarmem-stop", daemon=True).start()

        signal.signal(signal.SIGTERM, on_signal)
        signal.signal(signal.SIGINT, on_signal)
        if hasattr(signal, "SIGHUP"):

            def on_hangup(*_):
                threading.Thread(target=self._reload_tokens, daemon=True).start()
                if self.group is not None:  # the replicas check tokens too
                    self.group.forward_signal(signal.SIGHUP)

            signal.signal(signal.SIGHUP, on_hangup)
        while not self._stopped.wait(0.5):
            if signalled.is_set():
                break
        if not self._stopped.wait(self.config.grace_s + self.config.drain_notice_s + STOP_BUDGET_S):
            log.error("shutdown did not finish within grace_s + %.0f s; exiting without it", STOP_BUDGET_S)
            logging.shutdown()
            os._exit(1)

    def _reload_tokens(self) -> None:
        if self.authorizer.reload() and self.fast_front is not None:
            self.fast_front.refresh_grants()

    def __enter__(self) -> PolarMemServer:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
