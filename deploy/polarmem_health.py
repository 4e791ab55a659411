#!/usr/bin/env python3
"""Ask a PolarMem server's grpc.health.v1 service whether it is SERVING; exit 0 if so, 1 if not.

Used by the container's HEALTHCHECK and by the systemd unit's ExecStartPost (with --wait, so the
unit becomes active only once the store is open and the indexes are rebuilt). Needs only grpcio and
grpcio-health-checking, which the server itself depends on.

    polarmem-health [--address HOST:PORT] [--wait SECONDS] [--ca-file PEM]

The address defaults to POLARMEM_ADDRESS (the server's own setting) or 127.0.0.1:50051; a wildcard
host (0.0.0.0, [::]) is probed on the loopback address. With TLS, give the CA with --ca-file or
POLARMEM_HEALTH_CA_FILE.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

WILDCARD_HOSTS = {"0.0.0.0": "127.0.0.1", "[::]": "[::1]", "": "127.0.0.1"}


def probe_address(address: str) -> str:
    """The address to dial for a server listening on `address` (wildcards become loopback)."""
    host, _, port = address.rpartition(":")
    if not port.isdigit() or port == "0":
        raise ValueError(f"address must be HOST:PORT with a fixed port, got {address!r}")
    return f"{WILDCARD_HOSTS.get(host, host)}:{port}"


def check_once(channel: grpc.Channel, timeout_s: float) -> str:
    """The serving status name, or the gRPC status code name when the call fails."""
    try:
        response = health_pb2_grpc.HealthStub(channel).Check(health_pb2.HealthCheckRequest(service=""), timeout=timeout_s)
    except grpc.RpcError as error:
        return error.code().name
    return health_pb2.HealthCheckResponse.ServingStatus.Name(response.status)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--address", default=os.environ.get("POLARMEM_ADDRESS", "127.0.0.1:50051"))
    parser.add_argument("--wait", type=float, default=0.0, help="keep asking this many seconds (0: ask once)")
    parser.add_argument("--timeout", type=float, default=3.0, help="seconds per Check call")
    parser.add_argument("--ca-file", default=os.environ.get("POLARMEM_HEALTH_CA_FILE") or None,
                        help="PEM root certificate when the server serves TLS (env POLARMEM_HEALTH_CA_FILE); the "
                             "server's certificate must then be valid for the probed host")
    args = parser.parse_args(argv)
    try:
        target = probe_address(args.address)
    except ValueError as error:
        parser.error(str(error))
    if args.ca_file:
        with open(args.ca_file, "rb") as handle:
            channel = grpc.secure_channel(target, grpc.ssl_channel_credentials(handle.read()))
    else:
        channel = grpc.insecure_channel(target)
    deadline = time.monotonic() + args.wait
    with channel:
        while True:
            status = check_once(channel, args.timeout)
            if status == "SERVING":
                return 0
            if time.monotonic() >= deadline:
                print(f"polarmem at {target}: {status}", file=sys.stderr)
                return 1
            time.sleep(0.5)


if __name__ == "__main__":
    sys.exit(main())
