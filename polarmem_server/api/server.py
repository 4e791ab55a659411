"""The gRPC server: MemoryService behind one interceptor (status codes, metrics, draining),
grpc.health.v1, server reflection, Prometheus /metrics, optional TLS and bearer tokens, and a
graceful shutdown on SIGTERM / SIGINT.

Life cycle: the port opens first with health NOT_SERVING while the store is opened and every
index rebuilt; then SERVING. On shutdown: NOT_SERVING, no new calls (UNAVAILABLE), in-flight
calls get `grace_s` to finish, then RocksDB is flushed and closed.
"""

from __future__ import annotations

import logging
import signal
import threading
import time
from concurrent import futures
from pathlib import Path

import grpc
from grpc_health.v1 import health, health_pb2, health_pb2_grpc
from grpc_reflection.v1alpha import reflection
from prometheus_client import start_http_server

from polarmem.v1 import memory_service_pb2, memory_service_pb2_grpc
from polarmem_server.api.config import ServerConfig, load_tokens
from polarmem_server.api.status import Overloaded, Unavailable, public_message, status_for
from polarmem_server.memory import Memory
from polarmem_server.api.metrics import ServerMetrics
from polarmem_server.api.service import Authorizer, MemoryService
from polarmem_server.scoring.verification import Verifier

log = logging.getLogger("polarmem.server")
SERVICE_NAME = memory_service_pb2.DESCRIPTOR.services_by_name["MemoryService"].full_name
ADMISSION_HEADROOM = 16  # threads beyond max_concurrent_rpcs, to refuse excess calls without queueing


class ErrorsAndMetricsInterceptor(grpc.ServerInterceptor):
    """Every MemoryService call: refuse while starting or draining, count and time it, and turn
    exceptions into status codes through api.status.STATUS_TABLE (INTERNAL is logged with its
    traceback and counted; the client gets a generic message)."""

    def __init__(self, metrics: ServerMetrics, server: PolarMemServer, max_concurrent: int) -> None:
        self._metrics = metrics
        self._server = server
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
        if handler.unary_unary is not None:
            wrapped = grpc.unary_unary_rpc_method_handler(self._wrap(handler.unary_unary, method),
                                                          request_deserializer=handler.request_deserializer,
                                                          response_serializer=handler.response_serializer)
        elif handler.stream_unary is not None:
            wrapped = grpc.stream_unary_rpc_method_handler(self._wrap(handler.stream_unary, method),
                                                           request_deserializer=handler.request_deserializer,
                                                           response_serializer=handler.response_serializer)
        else:
            return handler
        self._wrapped[handler_call_details.method] = wrapped
        return wrapped

    def _wrap(self, behaviour, method: str):
        metrics = self._metrics

        def handle(request, context):
            code = grpc.StatusCode.OK
            started = time.perf_counter()
            admitted = self._admission.acquire(blocking=False)
            metrics.in_flight.inc()
            try:
                if not admitted:
                    raise Overloaded(f"the server is handling {self._max_concurrent} calls (max_concurrent_rpcs); "
                                     "retry with backoff")
                if not self._server.accepting:
                    raise Unavailable("the server is starting or shutting down; retry shortly")
                return behaviour(request, context)
            except Exception as exc:  # noqa: BLE001 - every failure becomes a status code here
                code = status_for(exc)
                if code == grpc.StatusCode.INTERNAL:
                    metrics.internal_errors.inc()
                    log.exception("internal error in %s", method)
                context.abort(code, public_message(exc, code))
            finally:
                if admitted:
                    self._admission.release()
                metrics.in_flight.dec()
                metrics.requests.labels(method, code.name).inc()
                metrics.latency.labels(method).observe(time.perf_counter() - started)

        return handle


class PolarMemServer:
    def __init__(self, config: ServerConfig) -> None:
        self.config = config.validate()
        self.metrics = ServerMetrics()
        self.memory: Memory | None = None
        self.accepting = False
        self.port = 0
        self.metrics_port = 0
        self._grpc: grpc.Server | None = None
        self._health = health.HealthServicer()
        self._metrics_httpd = None
        self._stopped = threading.Event()
        self._stop_lock = threading.Lock()

    @property
    def address(self) -> str:
        host = self.config.address.rsplit(":", 1)[0]
        return f"{host}:{self.port}"

    def start(self) -> PolarMemServer:
        cfg = self.config
        logging.basicConfig(level=cfg.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s")
        authorizer = Authorizer(load_tokens(cfg.tokens_file) if cfg.tokens_file else None)
        # Every admitted call needs a thread, and a call beyond the limit needs one to be refused
        # promptly, so the pool is at least the limit plus headroom. gRPC's own cap stays as a
        # backstop at the pool size: beyond it nothing queues waiting for a thread.
        threads = max(cfg.workers, cfg.max_concurrent_rpcs + ADMISSION_HEADROOM)
        self._grpc = grpc.server(
            futures.ThreadPoolExecutor(max_workers=threads, thread_name_prefix="polarmem-rpc"),
            interceptors=[ErrorsAndMetricsInterceptor(self.metrics, self, cfg.max_concurrent_rpcs)],
            options=[("grpc.max_receive_message_length", cfg.max_message_bytes),
                     ("grpc.max_send_message_length", cfg.max_message_bytes),
                     ("grpc.so_reuseport", 0)],
            maximum_concurrent_rpcs=threads,
        )
        self.verifier = Verifier.from_config(cfg, on_batch=self.metrics.observe_batch)
        self._service = MemoryService(None, self.metrics, authorizer, cfg.default_deadline_s, self.verifier)  # memory below
        memory_service_pb2_grpc.add_MemoryServiceServicer_to_server(self._service, self._grpc)
        health_pb2_grpc.add_HealthServicer_to_server(self._health, self._grpc)
        reflection.enable_server_reflection((SERVICE_NAME, health.SERVICE_NAME, reflection.SERVICE_NAME), self._grpc)
        self._set_health(health_pb2.HealthCheckResponse.NOT_SERVING)
        if cfg.tls_cert:
            credentials = grpc.ssl_server_credentials([(Path(cfg.tls_key).read_bytes(), Path(cfg.tls_cert).read_bytes())])
            self.port = self._grpc.add_secure_port(cfg.address, credentials)
        else:
            self.port = self._grpc.add_insecure_port(cfg.address)
        if self.port == 0:
            raise OSError(f"cannot bind gRPC to {cfg.address}")
        self._grpc.start()
        if cfg.metrics_port >= 0:
            self._metrics_httpd, _ = start_http_server(cfg.metrics_port, cfg.metrics_address, registry=self.metrics.registry)
            self.metrics_port = self._metrics_httpd.server_port
        # The port answers health checks (NOT_SERVING) while the indexes are rebuilt.
        self.memory = Memory(cfg.data_dir, durability=cfg.durability, threads=cfg.index_threads,
                             on_store_write=self.metrics.store_write.observe, verifier=self.verifier)
        self._service.memory = self.memory
        self.metrics.attach(self.memory)
        log.info("rebuilt %d items in %.2f s (%.0f items/s)", self.memory.rebuild_items, self.memory.rebuild_seconds,
                 self.memory.rebuild_items / max(self.memory.rebuild_seconds, 1e-9))
        self.accepting = True
        self._set_health(health_pb2.HealthCheckResponse.SERVING)
        log.info("serving on %s (metrics on %s)", self.address, self.metrics_port if cfg.metrics_port >= 0 else "off")
        return self

    def _set_health(self, status) -> None:
        for name in ("", SERVICE_NAME):
            self._health.set(name, status)

    def stop(self, grace_s: float | None = None) -> None:
        """Drain and close; safe to call more than once and from a signal handler's thread."""
        with self._stop_lock:
            if self._stopped.is_set():
                return
            self._set_health(health_pb2.HealthCheckResponse.NOT_SERVING)
            if self.config.drain_notice_s and self.accepting:
                time.sleep(self.config.drain_notice_s)
            self.accepting = False
            if self._grpc is not None:
                self._grpc.stop(self.config.grace_s if grace_s is None else grace_s).wait()
            if self.verifier is not None:
                self.verifier.close()
            if self.memory is not None:
                self.memory.flush()
                self.memory.close()
            if self._metrics_httpd is not None:
                self._metrics_httpd.shutdown()
                self._metrics_httpd.server_close()
            self._stopped.set()
            log.info("stopped")

    def serve_forever(self) -> None:
        """Block until SIGTERM / SIGINT, then shut down gracefully."""
        def on_signal(signum, _frame):
            log.info("signal %d: draining", signum)
            threading.Thread(target=self.stop, daemon=True).start()

        signal.signal(signal.SIGTERM, on_signal)
        signal.signal(signal.SIGINT, on_signal)
        self._stopped.wait()

    def __enter__(self) -> PolarMemServer:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()
