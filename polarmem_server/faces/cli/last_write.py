"""Read-your-writes across `polarmem` commands: each command is a process of its own, so the
consistency token of the last write (docs/deployment.md, "Consistency") is kept in a file per
server address, read when a command connects and written back when it exits. A later
`polarmem recall` / `item get` / `item list` to any server on the same Milvus then sees what an
earlier `polarmem remember` wrote, without waiting for Milvus's time tick.

The file is $POLARMEM_STATE_DIR (else $XDG_STATE_HOME/polarmem, else ~/.local/state/polarmem)
/ last-write-<digest of the address>, holding the token as hex. It is only ever a hint: a file
that cannot be read or written leaves the reads Bounded-stale, nothing worse, so such failures
are ignored.
"""

from __future__ import annotations

import atexit
import hashlib
import os
from pathlib import Path

from polarmem_server.storage import consistency


def state_dir() -> Path:
    if os.environ.get("POLARMEM_STATE_DIR"):
        return Path(os.environ["POLARMEM_STATE_DIR"]).expanduser()
    base = os.environ.get("XDG_STATE_HOME") or "~/.local/state"
    return Path(base).expanduser() / "polarmem"


def token_file(address: str) -> Path:
    return state_dir() / f"last-write-{hashlib.sha256(address.encode()).hexdigest()[:16]}"


def load(address: str) -> bytes:
    """The kept token; none where the file holds none a server would read (damaged, or written by
    another release): sent, such a token made every read of every later command INVALID_ARGUMENT."""
    try:
        token = bytes.fromhex(token_file(address).read_text().strip())
        consistency.token_level(token)
        return token
    except (OSError, ValueError):  # (InvalidArgument is a ValueError)
        return b""


def save(address: str, token: bytes) -> None:
    if not token or token <= load(address):  # another command may have written a later one
        return
    path = token_file(address)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        temporary = path.with_name(f"{path.name}.{os.getpid()}")
        temporary.write_text(token.hex())
        temporary.replace(path)
    except OSError:
        pass


def carry(client):
    """`client` (a PolarMemClient) starting from the kept token, and keeping its last on exit."""
    client.last_write.note_token(load(client.address))
    atexit.register(lambda: save(client.address, client.consistency_token))
    return client
