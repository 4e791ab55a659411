"""One gRPC front over an existing data directory, for bench_front.py (run as a subprocess so the
benchmark reads this process's CPU time from /proc). Prints ``serving on HOST:PORT`` once ready.

Fronts (the servicer, MemoryService, is the same object type in all of them):

* ``sync-bare``: grpc.server on a thread pool, no interceptor;
* ``sync-interceptor``: the same plus the production interceptor's per-call work
  (api.server.ErrorsAndMetricsInterceptor: admission, auth, limits, metrics);
* ``aio-pool``: grpc.aio.server running the sync handlers in its migration thread pool;
* ``aio-inline``: grpc.aio.server with coroutine handlers that call the sync handlers on the
  event-loop thread (the core search still releases the GIL, but the loop waits for it);
* ``aio-inline-interceptor``: aio-inline wrapped in the same interceptor work as sync-interceptor.

The production server itself (``polarmem serve``) is started by bench_front.py directly.
Not a test; not a server to deploy (errors on these fronts are not mapped to status codes).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from concurrent import futures
from types import SimpleNamespace

import grpc

from polarmem.v1 import memory_service_pb2
from polarmem_server.api.auth import Authorizer
from polarmem_server.api.metrics import ServerMetrics
from polarmem_server.api.server import ErrorsAndMetricsInterceptor
from polarmem_server.api.service import MemoryService
from polarmem_server.library.memory import Memory

METHODS = [
    m.name
    for m in memory_service_pb2.DESCRIPTOR.services_by_name["MemoryService"].methods
    if not m.client_streaming and not m.server_streaming
]
OPTIONS = [("grpc.so_reuseport", 0)]


def servicer(data_dir: str) -> tuple[Memory, MemoryService, ServerMetrics]:
    memory = Memory(data_dir, durability="sync")
    metrics = ServerMetrics()
    return memory, MemoryService(memory, metrics, Authorizer(None), 30.0), metrics


def intercepted(service: MemoryService, metrics: ServerMetrics):
    """The production interceptor's per-call wrapper around each unary handler."""
    front = SimpleNamespace(accepting=True, config=SimpleNamespace(access_log=False))
    interceptor = ErrorsAndMetricsInterceptor(metrics, front, 256, Authorizer(None))
    return {name: interceptor._wrap(getattr(service, name), name, stream=False) for name in METHODS}


def handlers(calls: dict, asynchronous: bool) -> grpc.GenericRpcHandler:
    table = {}
    for name, call in calls.items():
        method = memory_service_pb2.DESCRIPTOR.services_by_name["MemoryService"].methods_by_name[name]
        request_type = getattr(memory_service_pb2, method.input_type.name)
        response_type = getattr(memory_service_pb2, method.output_type.name)
        if asynchronous:

            async def behaviour(request, context, call=call):
                return call(request, context)
        else:
            behaviour = call
        table[name] = grpc.unary_unary_rpc_method_handler(
            behaviour, request_deserializer=request_type.FromString, response_serializer=response_type.SerializeToString
        )
    return grpc.method_handlers_generic_handler("polarmem.v1.MemoryService", table)


def serve_sync(data_dir: str, with_interceptor: bool) -> None:
    memory, service, metrics = servicer(data_dir)
    calls = intercepted(service, metrics) if with_interceptor else {n: getattr(service, n) for n in METHODS}
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=80), options=OPTIONS)
    server.add_generic_rpc_handlers((handlers(calls, asynchronous=False),))
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    print(f"serving on 127.0.0.1:{port}", flush=True)
    server.wait_for_termination()
    memory.close()


async def serve_aio(data_dir: str, inline: bool, with_interceptor: bool) -> None:
    memory, service, metrics = servicer(data_dir)
    calls = intercepted(service, metrics) if with_interceptor else {n: getattr(service, n) for n in METHODS}
    if inline:
        server = grpc.aio.server(options=OPTIONS)
    else:
        server = grpc.aio.server(migration_thread_pool=futures.ThreadPoolExecutor(max_workers=80), options=OPTIONS)
    server.add_generic_rpc_handlers((handlers(calls, asynchronous=inline),))
    port = server.add_insecure_port("127.0.0.1:0")
    await server.start()
    print(f"serving on 127.0.0.1:{port}", flush=True)
    await server.wait_for_termination()
    memory.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--front",
        required=True,
        choices=("sync-bare", "sync-interceptor", "aio-pool", "aio-inline", "aio-inline-interceptor"),
    )
    parser.add_argument("--data-dir", required=True)
    args = parser.parse_args()
    if args.front.startswith("sync"):
        serve_sync(args.data_dir, args.front == "sync-interceptor")
    else:
        asyncio.run(
            serve_aio(
                args.data_dir,
                inline=args.front.startswith("aio-inline"),
                with_interceptor=args.front.endswith("interceptor"),
            )
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
