"""`polarmem migrate --from SOURCE --to TARGET`: copies namespaces between a local data directory
and a Milvus deployment (storage/migrate.py does the work). SOURCE and TARGET are a directory or
``milvus://host:port[/prefix]`` (``milvus+tls://`` for TLS). Resumable: run it again after an
interruption and it skips what is already there."""

from __future__ import annotations

import argparse
import sys
import time
from urllib.parse import urlsplit

from polarmem_server.errors import PolarMemError

MILVUS_SCHEMES = {"milvus": "http", "milvus+tls": "https"}


def register(sub) -> None:
    """Adds the `migrate` subcommand to the CLI's subparsers."""
    p = sub.add_parser(
        "migrate",
        help="copy namespaces between a data directory and Milvus (resumable)",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--from", dest="source", required=True, help="a data directory or milvus://host:port[/prefix]")
    p.add_argument("--to", dest="target", required=True, help="a data directory or milvus://host:port[/prefix]")
    p.add_argument(
        "-n", "--namespace", action="append", default=[], help="a namespace to copy, repeatable (default: all)"
    )
    p.add_argument("--batch", type=int, default=500, help="items per read / write")
    p.add_argument("--milvus-token", default="", help="'user:password' or an API key for the Milvus side")
    p.add_argument("--milvus-ca-pem", default="", help="PEM file of the Milvus CA / server certificate (milvus+tls://)")
    p.add_argument("--milvus-timeout", type=float, default=60.0, help="seconds per Milvus call")
    p.add_argument(
        "--milvus-layout",
        choices=["collection", "shared", "pooled"],
        default="collection",
        help="a Milvus target: where namespaces it creates keep their items (docs/deployment.md)",
    )
    p.set_defaults(func=run)


def open_backend(location: str, args: argparse.Namespace):
    """A Backend for a directory or a milvus:// URL."""
    parts = urlsplit(location)
    if parts.scheme in MILVUS_SCHEMES:
        from polarmem_server.storage.milvus.backend import MilvusBackend
        from polarmem_server.storage.milvus.connection import MilvusSettings

        if not parts.hostname:
            raise ValueError(f"{location}: give milvus://host:port[/prefix]")
        prefix = parts.path.strip("/") or "polarmem"
        uri = f"{MILVUS_SCHEMES[parts.scheme]}://{parts.hostname}:{parts.port or 19530}"
        return MilvusBackend(
            MilvusSettings(
                uri,
                token=args.milvus_token,
                server_pem_path=args.milvus_ca_pem,
                timeout_s=args.milvus_timeout,
                prefix=prefix,
                layout=args.milvus_layout,
            )
        )
    if "://" in location:
        raise ValueError(f"{location}: use a directory or milvus://host:port[/prefix]")
    from polarmem_server.storage.local.backend import LocalBackend

    return LocalBackend(location)


def run(args: argparse.Namespace) -> int:
    from polarmem_server.storage.migrate import migrate

    started = time.monotonic()

    def progress(ns: str, done: int, total: int) -> None:
        rate = done / max(time.monotonic() - started, 1e-9)
        print(f"{ns}: {done}/{total} items ({rate:.0f} items/s)", file=sys.stderr, flush=True)

    source = target = None
    try:
        source = open_backend(args.source, args)
        target = open_backend(args.target, args)
        reports = migrate(source, target, args.namespace, args.batch, progress)
    except PolarMemError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    finally:
        for backend in (target, source):
            if backend is not None:
                backend.close()
    for r in reports:
        print(
            f"{r.namespace}: {r.target_items} items on the target = {r.source_items} on the source "
            f"(written {r.written}, replaced {r.replaced}, already there {r.skipped})"
        )
        if r.index_change:
            print(f"{r.namespace}: {r.index_change}")
    return 0
