"""Server settings from flags, environment variables (POLARMEM_*) and a TOML file, in that
order of precedence, over the defaults below.

Every configuration or environment error is a :class:`ConfigError`: one line that names the
setting and the fix. It is also a ``SystemExit``, so a command line that does not catch it
exits with status 1 and that line, never a traceback."""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

from polarmem_server.errors import EXIT_DAMAGED

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib


class ConfigError(ValueError, SystemExit):
    """A setting (or the environment it points at) that cannot work: the message names the
    setting and the fix. Uncaught, it ends the process with status 1 and prints that one line."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.code = f"polarmem: {message}"  # what SystemExit prints (and exit status 1)

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


class DamagedStoreRefusal(ConfigError):
    """The data directory is damaged: the process prints the one line and exits with
    EXIT_DAMAGED (not 1), so a service manager does not restart into it; it waits for a person."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.code = EXIT_DAMAGED  # SystemExit prints nothing for a number: say it first
        print(f"polarmem: {message}", file=sys.stderr, flush=True)


def split_address(address: str) -> tuple[str, str]:
    """(host, port) of a host:port address, the port as written ("[::1]:50051" -> "[::1]", "50051")."""
    host, _, port = address.rpartition(":")
    return host, port


@dataclass(frozen=True)
class ServerConfig:
    address: str = "127.0.0.1:50051"
    data_dir: str = "./polarmem-data"
    metrics_port: int = 9464  # 0: any free port; -1: no metrics endpoint
    metrics_address: str = "127.0.0.1"
    workers: int = 32
    max_message_bytes: int = 16 * 1024 * 1024
    max_concurrent_rpcs: int = 64
    default_deadline_s: float = 30.0
    durability: str = "sync"
    log_level: str = "INFO"
    tls_cert: str = ""
    tls_key: str = ""
    tokens_file: str = ""
    grace_s: float = 10.0
    drain_notice_s: float = 0.0  # health says NOT_SERVING this long before new calls are refused
    index_threads: int = 0  # 0: all cores
    engine: str = ""  # "" (none) | transformers | tensorrt_llm | embedding | lexical
    model: str = ""  # local checkpoint path for the model engines
    device: str = "cpu"
    dtype: str = ""  # "": the engine's default (float32 for transformers, the checkpoint's for tensorrt_llm)
    engine_backend: str = ""  # tensorrt_llm only: pytorch (default) | tensorrt
    engine_max_length: int = 0  # 0: the engine's default prompt + answer length
    engine_max_batch: int = (
        512  # 8 items of 16 concepts x 4 templates: the packed scorer fills a pass (docs/engines.md)
    )
    engine_max_delay_ms: float = 5.0
    engine_queue: int = 1024
    engine_timeout_s: float = 60.0
    access_log: bool = False  # one JSON line per RPC (method, namespace, code, ms, peer) on logger polarmem.access
    backup_dir: str = ""  # Backup destinations must lie inside it ("" = Backup is off; admin only either way)
    recover: str = "strict"  # strict (refuse a damaged store) | point-in-time (repair it at start-up)
    metrics_namespace_labels: bool = False  # per-namespace series (namespace names) on the metrics port
    backend: str = "local"  # local (RocksDB in data_dir) | milvus (a Milvus 2.3 server or cluster)
    milvus_uri: str = ""  # "" with backend milvus: http://127.0.0.1:19530
    milvus_token: str = ""
    milvus_tls: bool = False
    milvus_ca_pem: str = ""
    milvus_timeout: float = 10.0
    milvus_prefix: str = "polarmem"
    # collection (one per namespace) | shared (a partition per namespace) | pooled (rows told apart by ns; schema.py)
    milvus_layout: str = "collection"
    processes: int = 1  # > 1: one primary (writes) + read-only replicas on the same port (api/processes.py)
    # Who listens on `address`: the compiled front (C++, answers Recall from the core, hands every
    # other call to the Python listener on a private socket) or the Python listener itself.
    # "auto": the compiled front where it was built and serves (local backend; with processes > 1,
    # one front per process on the shared port).
    front: str = "auto"  # auto | compiled | python
    # When the core gets a namespace's view (library/core_recall.py): eager, at start-up and again
    # right after a write drops it; on_recall, by the namespace's next Recall, before the core answers it.
    core_views: str = "eager"  # eager | on_recall
    graph_checkpoint_s: float = (
        300.0  # local backend: save written namespaces' HNSW graphs this often (0: on stop only)
    )
    scrub_interval_s: float = 86_400.0  # local backend: read every store block this often to find damage (0: off)
    auto_create_namespaces: bool = False  # a write to a missing namespace creates it (namespace_autocreate.py)
    max_namespaces: int = 1000  # auto_create_namespaces creates none beyond this many namespaces

    def validate(self) -> ServerConfig:
        try:
            return self._validate()
        except ConfigError:
            raise
        except ValueError as exc:
            raise ConfigError(str(exc)) from None

    def _validate(self) -> ServerConfig:
        if self.recover not in ("strict", "point-in-time"):
            raise ValueError(f"setting recover: use 'strict' or 'point-in-time', got {self.recover!r}")
        if self.durability not in ("sync", "async"):
            raise ValueError(f"durability must be 'sync' or 'async', got {self.durability!r}")
        if self.workers < 1 or self.max_concurrent_rpcs < 1:
            raise ValueError("workers and max_concurrent_rpcs must be >= 1")
        if self.max_message_bytes < 1024:
            raise ValueError("max_message_bytes must be >= 1024")
        if bool(self.tls_cert) != bool(self.tls_key):
            raise ValueError("TLS needs both tls_cert and tls_key")
        if self.default_deadline_s <= 0 or self.grace_s < 0 or self.drain_notice_s < 0:
            raise ValueError("default_deadline_s must be > 0; grace_s and drain_notice_s >= 0")
        if self.engine not in ("", "transformers", "tensorrt_llm", "embedding", "lexical"):
            raise ValueError(
                f"engine must be transformers, tensorrt_llm, embedding, lexical or empty, got {self.engine!r}"
            )
        if self.dtype not in ("", "auto", "float32", "bfloat16", "float16"):
            raise ValueError(f"setting dtype: use float32, bfloat16, float16 or auto, got {self.dtype!r}")
        if self.engine_backend not in ("", "pytorch", "tensorrt"):
            raise ValueError(f"setting engine_backend: use pytorch or tensorrt, got {self.engine_backend!r}")
        if self.engine_max_length < 0:
            raise ValueError(
                f"setting engine_max_length: must be >= 0 (0 = the engine's default), got {self.engine_max_length}"
            )
        if (
            self.engine_max_batch < 1
            or self.engine_queue < 1
            or self.engine_max_delay_ms < 0
            or self.engine_timeout_s <= 0
        ):
            raise ValueError(
                "engine_max_batch and engine_queue must be >= 1, engine_max_delay_ms >= 0, engine_timeout_s > 0"
            )
        if self.max_namespaces < 1:
            raise ValueError(f"setting max_namespaces: must be >= 1, got {self.max_namespaces}")
        if self.processes < 1:
            raise ValueError(f"setting processes: must be >= 1 (1 = one process), got {self.processes}")
        if not self.graph_checkpoint_s >= 0:
            raise ValueError(
                f"setting graph_checkpoint_s: must be >= 0 seconds (0 = save graphs on stop only), "
                f"got {self.graph_checkpoint_s}"
            )
        if not self.scrub_interval_s >= 0:
            raise ValueError(
                f"setting scrub_interval_s: must be >= 0 seconds (0 = no scrub), got {self.scrub_interval_s}"
            )
        if self.core_views not in ("eager", "on_recall"):
            raise ValueError(f"setting core_views: use eager or on_recall, got {self.core_views!r}")
        if self.front not in ("auto", "compiled", "python"):
            raise ValueError(f"setting front: use auto, compiled or python, got {self.front!r}")
        if self.front == "compiled" and self.backend != "local":
            raise ValueError(
                "setting front: the compiled front serves the local backend; use --front auto "
                "(it then picks the Python listener), or --backend local"
            )
        if self.log_level.upper() not in ("DEBUG", "INFO", "WARNING", "ERROR"):
            raise ValueError(f"log_level must be DEBUG, INFO, WARNING or ERROR, got {self.log_level!r}")
        self._validate_places()
        self._validate_backend()
        return self

    def _validate_places(self) -> None:
        """The address, the metrics port and the data directory, before anything binds or opens:
        a port past 65535 raised OverflowError from the socket layer, and an empty data_dir put
        the store's files in the current directory."""
        _, port = split_address(self.address)
        if port.isdigit() and int(port) > 65535:
            raise ValueError(f"setting address: port {port} is past 65535; use host:port with a port 0-65535")
        if not -1 <= self.metrics_port <= 65535:
            raise ValueError(f"setting metrics_port: use 0-65535, or -1 for no metrics, got {self.metrics_port}")
        if self.backend == "local":
            if not self.data_dir.strip():
                raise ValueError("setting data_dir: empty; name the directory the store lives in")
            data_dir = Path(self.data_dir).expanduser()
            if data_dir.exists() and not data_dir.is_dir():
                raise ValueError(f"setting data_dir: {self.data_dir} is a file, not a directory; name a directory")

    def _validate_backend(self) -> None:
        """The storage backend and the settings that only make sense with one of them."""
        if self.backend not in ("local", "milvus"):
            raise ValueError(f"setting backend: use 'local' or 'milvus', got {self.backend!r}")
        defaults = ServerConfig.__dataclass_fields__
        milvus_set = [f for f in MILVUS_SETTINGS if getattr(self, f) != defaults[f].default]
        if self.backend == "local":
            if milvus_set:
                raise ValueError(
                    f"setting {milvus_set[0]}: the milvus_* settings need backend milvus "
                    "(--backend milvus); drop them or choose that backend"
                )
            return
        if self.processes > 1:
            raise ValueError(
                "setting processes: is for the local backend (replicas of one RocksDB store); with "
                "backend milvus run more servers against the same Milvus instead (docs/deployment.md)"
            )
        if self.milvus_layout not in ("collection", "shared", "pooled"):
            raise ValueError(
                f"setting milvus_layout: use 'collection', 'shared' or 'pooled', got {self.milvus_layout!r}"
            )
        if self.milvus_timeout <= 0:
            raise ValueError(f"setting milvus_timeout: must be > 0 seconds, got {self.milvus_timeout}")
        if self.milvus_ca_pem and not (self.milvus_tls or self.milvus_uri.startswith("https://")):
            raise ValueError(
                "setting milvus_ca_pem: it is for TLS; add --milvus-tls true or use an https:// milvus_uri"
            )
        for name, value, why in (
            ("recover", self.recover != "strict", "is for the local RocksDB store"),
            (
                "backup_dir",
                bool(self.backup_dir),
                "is for the local backend's snapshots; back Milvus up with its own tools",
            ),
            (
                "durability",
                self.durability != "sync",
                "is for the local store; Milvus acknowledges a write once its log has it",
            ),
            (
                "graph_checkpoint_s",
                self.graph_checkpoint_s != ServerConfig.__dataclass_fields__["graph_checkpoint_s"].default,
                "is for the local backend's HNSW graphs (Milvus keeps its own indexes)",
            ),
            (
                "scrub_interval_s",
                self.scrub_interval_s != ServerConfig.__dataclass_fields__["scrub_interval_s"].default,
                "is for the local RocksDB store (Milvus checks its own files)",
            ),
        ):
            if value:
                raise ValueError(f"setting {name}: {why} and cannot be used with backend milvus; drop it")

    def milvus_settings(self):
        """The Milvus backend's connection settings (storage/opening.py)."""
        from polarmem_server.storage.opening import milvus_settings

        return milvus_settings(
            uri=self.milvus_uri or "http://127.0.0.1:19530",
            token=self.milvus_token,
            secure=self.milvus_tls,
            server_pem_path=self.milvus_ca_pem,
            timeout_s=self.milvus_timeout,
            prefix=self.milvus_prefix,
            layout=self.milvus_layout,
        )


MILVUS_SETTINGS = (
    "milvus_uri",
    "milvus_token",
    "milvus_tls",
    "milvus_ca_pem",
    "milvus_timeout",
    "milvus_prefix",
    "milvus_layout",
)


HELP = {
    "address": "host:port to serve gRPC on (port 0 picks a free one)",
    "data_dir": "RocksDB data directory (created if missing)",
    "metrics_port": "Prometheus /metrics port (0 = any free port, -1 = off)",
    "metrics_address": "address the metrics endpoint binds to",
    "workers": "gRPC worker threads",
    "max_message_bytes": "largest request or response message, in bytes",
    "max_concurrent_rpcs": "RPCs handled at once; beyond it calls get RESOURCE_EXHAUSTED at once",
    "default_deadline_s": "deadline applied to calls that carry none, in seconds",
    "durability": "sync (an acknowledged write survives power loss) or async",
    "log_level": "DEBUG, INFO, WARNING or ERROR",
    "tls_cert": "PEM certificate file (with tls_key: serve TLS)",
    "tls_key": "PEM private key file",
    "tokens_file": "TOML file of bearer tokens: [tokens] NAME = { token = '...', namespaces = ['*'] }",
    "grace_s": "seconds in-flight calls get to finish on SIGTERM / SIGINT",
    "drain_notice_s": "seconds health reports NOT_SERVING, still serving, before draining starts (lets load balancers move away)",
    "index_threads": "threads per search in the compiled core (0 = all cores)",
    "engine": "scoring engine for server-side verification: transformers, tensorrt_llm, embedding, lexical ('' = none)",
    "model": "local checkpoint path for the transformers / tensorrt_llm engines",
    "device": "torch device for the transformers engine (cpu, cuda)",
    "access_log": "log one JSON line per RPC (method, namespace, status code, milliseconds, peer) at INFO",
    "backup_dir": "Backup destinations must lie inside this directory (empty = the Backup RPC is refused)",
    "dtype": "model engines' weight dtype: float32, bfloat16, float16, auto (tensorrt_llm); empty = engine default",
    "engine_backend": "tensorrt_llm backend: pytorch (default) or tensorrt",
    "engine_max_length": "longest prompt + answer in tokens for the model engines (0 = engine default)",
    "engine_max_batch": "prompts per engine batch (concepts x templates)",
    "engine_max_delay_ms": "longest a request waits for its batch to fill",
    "engine_queue": "requests waiting for the engine; beyond it RESOURCE_EXHAUSTED",
    "engine_timeout_s": "longest one verification may take (DEADLINE_EXCEEDED after)",
    "recover": "strict: refuse to open a data directory whose write-ahead log is damaged (run `polarmem repair`); "
    "point-in-time: repair it at start-up, keeping everything up to the last intact record, and log what was dropped",
    "processes": "server processes on the port: the primary takes every write, the others serve reads from "
    "read-only replicas and forward writes to it (bounded staleness; docs/performance.md)",
    "graph_checkpoint_s": "seconds between saves of the approximate-index (HNSW) graphs of namespaces written to "
    "since, so a crash costs no rebuild of them (0 = save on stop only; local backend)",
    "scrub_interval_s": "seconds between background reads of every store block, which find a damaged file before a "
    "client's read does (0 = off; local backend; docs/failure-behaviour.md)",
    "front": "who listens on address: compiled (the C++ front answers Recall from the core and hands every other "
    "call to the Python listener on a private socket; with processes > 1 one in every process), python, or auto "
    "(compiled where it was built and serves: local backend; docs/fast-front.md)",
    "core_views": "when the core gets a namespace's view, from which it answers Recalls without the library: eager "
    "(at start-up, and again right after a write that changes settings, rule or aliases drops it; the items' "
    "records are read back into the core in the background after start-up) or on_recall (made by the namespace's "
    "next Recall, before the core answers it; records as the library reads them; docs/fast-front.md)",
    "auto_create_namespaces": "a Remember to a namespace that does not exist creates it from the server's template "
    "(open vocabulary, default encoder: what `polarmem namespace create` makes); per-user / "
    "per-agent memory",
    "max_namespaces": "auto_create_namespaces creates no namespace beyond this many (RESOURCE_EXHAUSTED)",
    "metrics_namespace_labels": "publish per-namespace series (which name every namespace) on the unauthenticated "
    "metrics port",
    "backend": "where namespaces are stored: local (RocksDB in data_dir) or milvus (a Milvus 2.3 server or cluster, "
    "shared by any number of servers; docs/deployment.md)",
    "milvus_uri": "backend milvus: the Milvus address, http://host:19530 or https://… ('' = http://127.0.0.1:19530)",
    "milvus_token": "backend milvus: 'user:password' or an API key ('' = no authentication)",
    "milvus_tls": "backend milvus: speak TLS to Milvus (https:// URIs imply it)",
    "milvus_ca_pem": "backend milvus: PEM file of the CA / server certificate for TLS",
    "milvus_timeout": "backend milvus: seconds per Milvus call (a slower one is DEADLINE_EXCEEDED)",
    "milvus_prefix": "backend milvus: collection-name prefix, so several deployments can share one Milvus",
    "milvus_layout": "backend milvus: where namespaces this server creates keep their items: collection (one each; "
    "for tens of namespaces, own index), shared (one collection per dimension, a "
    "partition per namespace; up to 4,096) or pooled (one collection per dimension, "
    "namespaces told apart by a field; creating one is a metadata write; for thousands; "
    "docs/deployment.md)",
}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--config", help="TOML file with any of the settings below (flags and POLARMEM_* win)")
    for f in fields(ServerConfig):
        kind = str if isinstance(f.default, bool) else type(f.default)  # booleans read as true / false
        parser.add_argument(
            f"--{f.name.replace('_', '-')}",
            dest=f.name,
            default=None,
            type=kind,
            help=f"{HELP[f.name]} [env POLARMEM_{f.name.upper()}; default {f.default!r}]",
        )


def coerce_setting(value: Any, default: Any) -> Any:
    """A setting's value (from TOML, an environment variable or a flag) as its default's type;
    booleans accept 1/0, true/false, yes/no, on/off. ValueError names the expected type.
    Shared by the server's settings and the client connection settings (faces/connection.py)."""
    if isinstance(default, bool):
        if isinstance(value, bool):
            return value
        text = str(value).strip().lower()
        if text in ("1", "true", "yes", "on"):
            return True
        if text in ("0", "false", "no", "off", ""):
            return False
        raise ValueError(f"cannot read {value!r} as true / false")
    try:
        return type(default)(value)
    except (TypeError, ValueError):
        raise ValueError(f"cannot read {value!r} as {type(default).__name__}") from None


def _coerce(name: str, value: Any) -> Any:
    try:
        return coerce_setting(value, next(f.default for f in fields(ServerConfig) if f.name == name))
    except ValueError as exc:
        raise ConfigError(f"setting {name}: {exc}") from None


# Settings that are gone, and what replaced them: named in the error a file or the environment
# that still sets one gets (a silently ignored setting would leave an operator guessing).
REMOVED_SETTINGS = {
    "fast_front_address": "removed: the compiled front listens on `address` itself now (setting `front`, "
    "default auto); delete the setting and point clients at `address`",
}


def load_config(
    flags: dict[str, Any] | None = None, env: dict[str, str] | None = None, config_file: str | None = None
) -> ServerConfig:
    """Defaults < TOML file < POLARMEM_* environment < flags."""
    env = dict(os.environ) if env is None else env
    values: dict[str, Any] = {}
    config_file = config_file or env.get("POLARMEM_CONFIG")
    known = {f.name for f in fields(ServerConfig)}
    if config_file:
        try:
            data = tomllib.loads(Path(config_file).read_text())
        except FileNotFoundError:
            raise ConfigError(f"setting config: {config_file} does not exist; fix the path") from None
        except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
            raise ConfigError(f"setting config: {config_file} is not readable TOML ({exc})") from None
        # A [client] table holds the client commands' connection settings (faces/connection.py),
        # so one file can serve both; the server reads [server], or the top level without [client].
        section = data.get("server", {k: v for k, v in data.items() if k != "client"})
        for name in set(section) & set(REMOVED_SETTINGS):
            raise ConfigError(f"setting {name} ({config_file}): {REMOVED_SETTINGS[name]}")
        unknown = set(section) - known
        if unknown:
            raise ConfigError(
                f"setting config: {config_file} has unknown settings {sorted(unknown)}; known: "
                "see `polarmem serve --help`"
            )
        values.update({k: _coerce(k, v) for k, v in section.items()})
    for name, why in REMOVED_SETTINGS.items():
        if f"POLARMEM_{name.upper()}" in env:
            raise ConfigError(f"setting {name} (POLARMEM_{name.upper()}): {why}")
    for name in known:
        if f"POLARMEM_{name.upper()}" in env:
            values[name] = _coerce(name, env[f"POLARMEM_{name.upper()}"])
    for name, value in (flags or {}).items():
        if name in known and value is not None:
            values[name] = _coerce(name, value)
    return dataclasses.replace(ServerConfig(), **values).validate()
