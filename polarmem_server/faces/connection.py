"""Where client commands (`polarmem ...`, `polarmem mcp`) connect: flags > POLARMEM_* environment > the `[client]` table of a
TOML config file > defaults.

The config file is `--config FILE`, else $POLARMEM_CONFIG, else ~/.config/polarmem/config.toml
when it exists. It may hold the server's settings too (`[server]`, read by `polarmem serve`):

    [client]
    address = "memory.internal:50051"
    token_file = "~/.config/polarmem/token"   # or token = "..."
    tls_ca = "/etc/polarmem/ca.pem"           # PEM roots; tls = true uses the system's roots
    namespace = "photos"                      # default for -n
"""

from __future__ import annotations

import argparse
import os
import sys
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from polarmem_server.api.config import coerce_setting

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

DEFAULT_CONFIG = Path("~/.config/polarmem/config.toml")


@dataclass(frozen=True)
class Connection:
    address: str = "127.0.0.1:50051"
    token: str = ""
    token_file: str = ""
    tls: bool = False
    tls_ca: str = ""
    tls_server_name: str = ""
    timeout_s: float = 30.0
    namespace: str = ""

    def resolved_token(self) -> str | None:
        """The token, or the first line of token_file; None without either."""
        if self.token:
            return self.token
        if self.token_file:
            path = Path(self.token_file).expanduser()
            try:
                return path.read_text().strip() or None
            except OSError as exc:
                raise ValueError(f"token_file: cannot read {str(path)!r} ({exc.strerror or exc})") from None
        return None

    def client_options(self) -> dict[str, Any]:
        """Keyword arguments of PolarMemClient / AsyncPolarMemClient for this connection."""
        roots = None
        if self.tls_ca:
            path = Path(self.tls_ca).expanduser()
            try:
                roots = path.read_bytes()
            except OSError as exc:
                raise ValueError(f"tls_ca: cannot read {str(path)!r} ({exc.strerror or exc})") from None
        return dict(
            address=self.address,
            token=self.resolved_token(),
            root_certificates=roots,
            tls=self.tls,
            tls_server_name=self.tls_server_name or None,
            timeout_s=self.timeout_s,
        )

    def client(self):
        from polarmem_server.faces.client import PolarMemClient

        return PolarMemClient(**self.client_options())


HELP = {
    "address": "server host:port",
    "token": "bearer token (prefer --token-file or POLARMEM_TOKEN: flags show in `ps`)",
    "token_file": "file holding the bearer token",
    "tls": "connect with TLS, trusting the system's root certificates",
    "tls_ca": "PEM root certificates to trust (implies TLS)",
    "tls_server_name": "name to check the server certificate against (when it differs from the address)",
    "timeout_s": "deadline of each call, in seconds (a server that is starting is waited for within it)",
}


def add_arguments(parser: argparse.ArgumentParser, namespace: bool = True) -> None:
    """The connection flags every client command takes (defaults None: unset, so lower sources apply)."""
    group = parser.add_argument_group("connection (flags > POLARMEM_* environment > [client] in the config file)")
    group.add_argument(
        "--config",
        dest="client_config",
        metavar="FILE",
        help=f"TOML file with a [client] table [env POLARMEM_CONFIG; default {DEFAULT_CONFIG}]",
    )
    for f in fields(Connection):
        if f.name == "namespace":
            continue
        flag = "--timeout" if f.name == "timeout_s" else f"--{f.name.replace('_', '-')}"
        env = f"POLARMEM_{f.name.upper()}"
        if f.type in (bool, "bool"):
            group.add_argument(
                flag, dest=f.name, action="store_const", const=True, default=None, help=f"{HELP[f.name]} [env {env}=1]"
            )
        else:
            group.add_argument(
                flag,
                dest=f.name,
                default=None,
                type=float if f.name == "timeout_s" else str,
                help=f"{HELP[f.name]} [env {env}; default {f.default!r}]",
            )
    if namespace:
        parser.add_argument(
            "-n",
            "--namespace",
            default=None,
            help="namespace [env POLARMEM_NAMESPACE, or namespace in the config file]",
        )


def _coerce(name: str, value: Any, source: str) -> Any:
    try:
        return coerce_setting(value, next(f.default for f in fields(Connection) if f.name == name))
    except ValueError as exc:
        raise ValueError(f"{source}: {name}: {exc}") from None


def load_connection(args: argparse.Namespace, env: dict[str, str] | None = None) -> Connection:
    """Connection from parsed flags, the environment and the config file."""
    env = dict(os.environ) if env is None else env
    known = {f.name for f in fields(Connection)}
    values: dict[str, Any] = {}
    config_file = getattr(args, "client_config", None) or env.get("POLARMEM_CONFIG")
    path = Path(config_file).expanduser() if config_file else DEFAULT_CONFIG.expanduser()
    if config_file or path.exists():
        try:
            data = tomllib.loads(path.read_text())
        except OSError as exc:
            raise ValueError(f"config file {str(path)!r}: {exc.strerror or exc}") from None
        except tomllib.TOMLDecodeError as exc:
            raise ValueError(f"config file {str(path)!r}: not valid TOML ({exc})") from None
        section = data.get("client", {})
        if not isinstance(section, dict):
            raise ValueError(f"config file {str(path)!r}: [client] must be a table")
        unknown = sorted(set(section) - known)
        if unknown:
            from polarmem_server.domain.suggest import did_you_mean

            raise ValueError(
                f"config file {str(path)!r}: unknown [client] setting {unknown[0]!r}"
                f"{did_you_mean(unknown[0], known)}; known: {', '.join(sorted(known))}"
            )
        values.update({k: _coerce(k, v, str(path)) for k, v in section.items()})
    for name in known:
        if env.get(f"POLARMEM_{name.upper()}"):
            values[name] = _coerce(name, env[f"POLARMEM_{name.upper()}"], f"POLARMEM_{name.upper()}")
    for name in known:
        value = getattr(args, name, None)
        if value is not None:
            values[name] = value
    if getattr(args, "token_file", None) and getattr(args, "token", None) is None:
        values.pop("token", None)  # an explicit --token-file beats a token from the environment or file
    timeout = values.get("timeout_s", Connection.timeout_s)
    if not timeout > 0:  # a deadline already past: each call failed DEADLINE_EXCEEDED, or did not, by chance
        raise ValueError(f"--timeout: the deadline of each call must be > 0 seconds, got {timeout}")
    return Connection(**values)
