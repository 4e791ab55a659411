"""Bearer tokens: who may call which RPC on which namespace.

A tokens file (TOML) names each token, the namespaces it may use ("*" = all) and its role::

    [tokens.dashboard]
    token = "..."
    namespaces = ["robot-1"]
    role = "read"        # read | write | admin; required (a file without it is refused)

Roles are cumulative: ``read`` may look (GetNamespace, ListNamespaces, Recall, GetItem,
GetConcept, ListConcepts, ListItems, ScoreConcepts); ``write`` may also change items (Remember,
RememberStream, Observe, Forget, UpdateItem, ClearNamespace — every item, as Forget one by one —
and, where the server creates namespaces on first use, a Remember creates one); ``admin`` may also change namespaces (CreateNamespace, UpdateNamespace, DeleteNamespace,
Calibrate). An RPC missing from METHOD_ROLES needs admin.

The server checks the token and the role in its interceptor, from the call's metadata, before the
handler runs (so a stream with no token is refused before its first message), and the handler
checks the namespace. Tokens are compared in constant time: the presented token's SHA-256 is
compared with every known token's digest with ``hmac.compare_digest``, all of them, every call.
``reload()`` (the server calls it on SIGHUP) swaps in a re-read file; a file that does not parse
or yields no token leaves the old tokens in force (and logs an ERROR); at start-up such a file is
refused, naming it: a tokens file never means "no authentication".
"""

from __future__ import annotations

import dataclasses
import hashlib
import hmac
import logging
import sys
import threading
from collections.abc import Mapping
from pathlib import Path

from polarmem_server.errors import InvalidArgument, PermissionDenied, Unauthenticated, quoted

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib

log = logging.getLogger("polarmem.auth")
ROLES = ("read", "write", "admin")
DEFAULT_ROLE = "admin"
METHOD_ROLES = {
    "GetNamespace": "read",
    "ListNamespaces": "read",
    "Recall": "read",
    "GetItem": "read",
    "GetConcept": "read",
    "ListConcepts": "read",
    "ListItems": "read",
    "ScoreConcepts": "read",
    "Remember": "write",
    "RememberStream": "write",
    "Observe": "write",
    "Forget": "write",
    # ClearNamespace forgets every item (what Forget allows one by one); settings and vocabulary stay.
    "UpdateItem": "write",
    "ClearNamespace": "write",
    "CreateNamespace": "admin",
    "UpdateNamespace": "admin",
    "DeleteNamespace": "admin",
    "Calibrate": "admin",
}


@dataclasses.dataclass(frozen=True)
class Grant:
    """What one token allows."""

    name: str
    digest: bytes
    namespaces: frozenset[str]
    role: str

    def allows_role(self, needed: str) -> bool:
        return ROLES.index(self.role) >= ROLES.index(needed)


def _digest(token: str | bytes) -> bytes:
    return hashlib.sha256(token.encode() if isinstance(token, str) else token).digest()


def load_grants(path: str | Path) -> list[Grant]:
    """Reads a tokens file; InvalidArgument naming the entry and the fix when one is malformed."""
    try:
        data = tomllib.loads(Path(path).read_text())
    except FileNotFoundError:
        raise InvalidArgument(f"setting tokens_file: {path} does not exist; create it or unset tokens_file") from None
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise InvalidArgument(f"setting tokens_file: {path} is not readable TOML ({exc})") from None
    # A file that yields no token must not mean "no authentication": an empty file, a lone
    # [tokens] or a misspelt [token] used to open the server without a word (issue 49).
    unknown = sorted(set(data) - {"tokens"})
    if unknown:
        raise InvalidArgument(
            f"setting tokens_file: {path}: unknown top-level key(s) {', '.join(map(quoted, unknown))}; "
            "each token goes in its own [tokens.NAME] table"
        )
    tokens = data.get("tokens", {})
    if not isinstance(tokens, dict):
        raise InvalidArgument(f"setting tokens_file: {path}: tokens must be tables [tokens.NAME], not a value")
    if not tokens:
        raise InvalidArgument(
            f"setting tokens_file: {path} holds no token; add a [tokens.NAME] table with token = '...' "
            "and role = \"read\" | \"write\" | \"admin\" (or unset tokens_file to run without "
            "authentication, on a loopback address)"
        )
    grants, seen = [], set()
    for name, entry in tokens.items():
        token = entry.get("token") if isinstance(entry, dict) else None
        if not token or not isinstance(token, str):
            raise InvalidArgument(f"setting tokens_file: {path}: tokens.{name} needs token = '...'")
        if "role" not in entry:
            # Before, an entry without a role was admin, silently: a token meant to read could
            # delete namespaces. Now the file says what each token may do.
            raise InvalidArgument(
                f"setting tokens_file: {path}: tokens.{name} has no role; add role = \"read\", "
                "\"write\" or \"admin\" (an entry without one used to be admin)"
            )
        role = entry["role"]
        if role not in ROLES:
            raise InvalidArgument(
                f"setting tokens_file: {path}: tokens.{name}.role must be one of {ROLES}, got {quoted(role)}"
            )
        namespaces = entry.get("namespaces", ["*"])
        if not isinstance(namespaces, list) or not all(isinstance(n, str) for n in namespaces):
            raise InvalidArgument(f"setting tokens_file: {path}: tokens.{name}.namespaces must be a list of names")
        digest = _digest(token)
        if digest in seen:
            raise InvalidArgument(f"setting tokens_file: {path}: tokens.{name} repeats another entry's token")
        seen.add(digest)
        grants.append(Grant(name, digest, frozenset(namespaces), role))
    return grants


def grants_from_mapping(tokens: Mapping[str, set[str]]) -> list[Grant]:
    """token -> namespaces (the in-code form tests and embedders use): admin role."""
    return [Grant(f"token{i}", _digest(t), frozenset(ns), DEFAULT_ROLE) for i, (t, ns) in enumerate(tokens.items())]


def _metadata_of(context_or_metadata) -> tuple:
    if hasattr(context_or_metadata, "invocation_metadata"):
        return tuple(context_or_metadata.invocation_metadata() or ())
    return tuple(context_or_metadata or ())


class Authorizer:
    """Bearer tokens with namespaces and roles. No tokens: open (every call allowed)."""

    def __init__(
        self, tokens: Mapping[str, set[str]] | list[Grant] | None = None, path: str | Path | None = None
    ) -> None:
        self._path = path
        self._lock = threading.Lock()
        if path is not None:
            self._grants = load_grants(path)
        elif isinstance(tokens, list):
            self._grants = list(tokens)
        else:
            self._grants = grants_from_mapping(tokens or {})

    @property
    def grants(self) -> list[Grant]:
        """The tokens in force (the compiled Recall front checks them itself)."""
        return list(self._grants)

    @property
    def enabled(self) -> bool:
        return bool(self._grants)

    def reload(self) -> bool:
        """Re-reads the tokens file; keeps the old tokens (and logs why) when it does not load."""
        if self._path is None:
            return False
        try:
            grants = load_grants(self._path)
        except InvalidArgument as exc:
            log.error("tokens file not reloaded, the previous tokens stay in force: %s", exc)
            return False
        with self._lock:
            self._grants = grants
        log.info("tokens file %s reloaded: %d token(s)", self._path, len(grants))
        return True

    def grant_of(self, context_or_metadata) -> Grant | None:
        """The caller's grant (None when auth is off); Unauthenticated without a known token."""
        grants = self._grants
        if not grants:
            return None
        header = ""
        for key, value in _metadata_of(context_or_metadata):
            if key == "authorization":
                header = value if isinstance(value, str) else value.decode("latin-1")
                break
        scheme, _, token = header.partition(" ")
        presented = _digest(token.strip()) if scheme.lower() == "bearer" else b""
        found = None
        for grant in grants:  # every grant, no early exit: the time taken says nothing about which matched
            if hmac.compare_digest(presented, grant.digest):
                found = grant
        if found is None:
            raise Unauthenticated("send 'authorization: Bearer <token>' with a token the server knows")
        return found

    def authorize_method(self, context_or_metadata, method: str) -> Grant | None:
        """Token and role for an RPC (by its short name); namespaces are the handler's check."""
        grant = self.grant_of(context_or_metadata)
        needed = METHOD_ROLES.get(method, "admin")
        if grant is not None and not grant.allows_role(needed):
            raise PermissionDenied(f"{method} needs the {needed} role; token {grant.name!r} has role {grant.role!r}")
        return grant

    def namespaces_of(self, context) -> set[str] | None:
        """The namespaces the caller may use (None = all)."""
        grant = self.grant_of(context)
        if grant is None or "*" in grant.namespaces:
            return None
        return set(grant.namespaces)

    def check(self, context, namespace: str) -> None:
        allowed = self.namespaces_of(context)
        if allowed is not None and namespace not in allowed:
            raise PermissionDenied(f"this token may not use namespace {quoted(namespace)}")
