"""``polarmem backup DEST`` (online, through a running server) and ``polarmem restore SNAPSHOT
DATA_DIR`` (offline, local files). See docs/operations.md, "Backup and restore"."""

from __future__ import annotations

import argparse
import os
import sys

import grpc

from polarmem_server.errors import PolarMemError
from polarmem_server.faces import connection


def _backup(args: argparse.Namespace) -> int:
    """Backup through the client, connected like every client command (flags, POLARMEM_*,
    the config file's [client] table; TLS and token files included)."""
    from polarmem_server.faces.client import PolarMemClient
    from polarmem_server.faces.connection import load_connection

    destination = os.path.abspath(args.destination) if args.relative_to_cwd else args.destination
    try:
        with PolarMemClient(**load_connection(args).client_options()) as client:
            response = client.backup(destination, timeout_s=args.backup_timeout_s)
    except grpc.RpcError as exc:
        print(f"backup failed: {exc.code().name}: {exc.details()}", file=sys.stderr)
        return 1
    except ValueError as exc:
        print(f"backup failed: {exc}", file=sys.stderr)
        return 1
    items = sum(n.items for n in response.namespaces)
    print(
        f"snapshot written to {response.destination_dir} on the server: {len(response.namespaces)} namespace(s), "
        f"{items} item(s), {response.files} files, {response.total_bytes / 2**20:.1f} MiB in {response.seconds:.1f} s"
    )
    for entry in response.namespaces:
        print(f"  {entry.namespace}: {entry.items} item(s)")
    return 0


def _restore(args: argparse.Namespace) -> int:
    from polarmem_server.storage.local.backup import restore

    try:
        manifest = restore(args.snapshot, args.data_dir)
    except PolarMemError as exc:
        print(f"restore failed: {exc}", file=sys.stderr)
        return 1
    print(
        f"restored {args.snapshot} (taken {manifest.created_at}, {sum(manifest.namespace_items.values())} item(s), "
        f"checksums verified) into {args.data_dir}; start the server with data_dir = {args.data_dir}"
    )
    return 0


def _verify(args: argparse.Namespace) -> int:
    from polarmem_server.storage.local.backup import verify

    try:
        manifest = verify(args.snapshot)
    except PolarMemError as exc:
        print(f"verify failed: {exc}", file=sys.stderr)
        return 1
    print(f"{args.snapshot}: {len(manifest.files)} files, {manifest.total_bytes} bytes, checksums match")
    return 0


def build_parser(prog: str = "polarmem") -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=prog, description="Back up, verify and restore a PolarMem data directory")
    sub = parser.add_subparsers(dest="command", required=True)
    backup = sub.add_parser("backup", help="snapshot a running server's store to a directory on the server")
    backup.add_argument("destination", help="absolute directory on the SERVER's file system; must not exist")
    connection.add_arguments(backup, namespace=False)  # the token needs admin (every namespace)
    backup.add_argument(
        "--timeout-s",
        dest="backup_timeout_s",
        type=float,
        default=3600.0,
        help="deadline of the backup call, in seconds (default 3600; the connection's "
        "--timeout is for short calls and does not apply)",
    )
    backup.add_argument(
        "--relative-to-cwd",
        action="store_true",
        help="make a relative destination absolute against this shell's directory "
        "(only meaningful when the server runs on this machine)",
    )
    backup.set_defaults(func=_backup)
    restore = sub.add_parser("restore", help="copy a verified snapshot into an empty data directory (offline)")
    restore.add_argument("snapshot")
    restore.add_argument("data_dir")
    restore.set_defaults(func=_restore)
    verify = sub.add_parser("verify", help="re-check a snapshot's files against its manifest")
    verify.add_argument("snapshot")
    verify.set_defaults(func=_verify)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry for ``polarmem backup|restore|verify ...`` (argv without the program name)."""
    args = build_parser().parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
