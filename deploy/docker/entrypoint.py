#!/usr/bin/env python3
"""The container's entrypoint: `polarmem serve`, refused beyond loopback without tokens.

The image listens on 0.0.0.0 by default; a server there without a tokens file lets anyone who
reaches the container call every RPC as admin, Backup and DeleteNamespace included (issue 49).
So, as `polarmem mcp --transport http` does, this refuses such a start unless told so in so many
words: POLARMEM_ALLOW_UNAUTHENTICATED=yes, or --allow-unauthenticated. The address and tokens
file are read with the server's own settings loader (flags > POLARMEM_* > --config file), so
what is checked is what `polarmem serve` will use.

Exit status 2 (a refused setting); otherwise this process becomes `polarmem serve`.
"""

from __future__ import annotations

import argparse
import ipaddress
import os
import sys

ALLOW_FLAG = "--allow-unauthenticated"
ALLOW_ENV = "POLARMEM_ALLOW_UNAUTHENTICATED"


def is_loopback(host: str) -> bool:
    host = host.strip("[]")
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False  # a host name other than localhost, or "" (all addresses): not loopback


def refusal(args: list[str], env: dict[str, str]) -> str | None:
    """Why the server must not start, or None."""
    from polarmem_server.api import config

    parser = argparse.ArgumentParser(add_help=False)
    config.add_arguments(parser)
    parsed, _ = parser.parse_known_args(args)
    flags = {f.name: getattr(parsed, f.name) for f in config.fields(config.ServerConfig)}
    settings = config.load_config(flags, config_file=parsed.config, env=env)
    host = settings.address.rsplit(":", 1)[0]
    if settings.tokens_file or is_loopback(host):
        return None
    return (f"polarmem: setting address: {settings.address} is beyond loopback and no tokens_file is set: anyone who "
            "reaches this container could call every RPC as admin. Set POLARMEM_TOKENS_FILE (docs/operations.md, "
            f"\"Tokens\"), listen on 127.0.0.1, or say so in so many words: {ALLOW_ENV}=yes")


def main(argv: list[str]) -> int:
    allowed = ALLOW_FLAG in argv or os.environ.get(ALLOW_ENV, "") == "yes"
    args = [a for a in argv if a != ALLOW_FLAG]
    if not allowed and not {"-h", "--help"} & set(args):
        why = refusal(args, dict(os.environ))
        if why is not None:
            print(why, file=sys.stderr, flush=True)
            return 2
    os.execvp("polarmem", ["polarmem", "serve", *args])
    return 1  # not reached


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
