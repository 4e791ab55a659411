"""Private temporary directories that outlive a SIGKILL only until the next start.

The server keeps Unix sockets in fresh 0700 directories under the system's temp directory
(``polarmem-front-*`` for the compiled front, ``polarmem-processes-*`` for a --processes
group). A clean stop removes them; a SIGKILL cannot. Each directory therefore records its
owner's pid, and every server start removes the directories of owners that are gone.
"""

from __future__ import annotations

import logging
import os
import shutil
import tempfile
from pathlib import Path

log = logging.getLogger("polarmem.server")
OWNER_FILE = "owner.pid"
PREFIXES = ("polarmem-front-", "polarmem-processes-")


def owned_temp_dir(prefix: str) -> Path:
    """A new 0700 directory under the temp directory, marked with this process's pid."""
    directory = Path(tempfile.mkdtemp(prefix=prefix))
    os.chmod(directory, 0o700)
    (directory / OWNER_FILE).write_text(f"{os.getpid()}\n")
    return directory


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone else's process: not ours to judge
    return True


def remove_stale(root: str | os.PathLike | None = None, prefixes: tuple[str, ...] = PREFIXES) -> list[Path]:
    """Removes this user's directories of ``prefixes`` whose owner process no longer exists;
    returns them. A directory without an owner file (an older server's) is left alone."""
    removed = []
    for prefix in prefixes:
        for directory in Path(root or tempfile.gettempdir()).glob(f"{prefix}*"):
            try:
                if directory.stat().st_uid != os.getuid() or not directory.is_dir():
                    continue
                pid = int((directory / OWNER_FILE).read_text().strip())
            except (OSError, ValueError):
                continue
            if pid != os.getpid() and not _alive(pid):
                shutil.rmtree(directory, ignore_errors=True)
                removed.append(directory)
    if removed:
        log.info(
            "removed %d temporary director%s left by stopped servers: %s",
            len(removed),
            "y" if len(removed) == 1 else "ies",
            ", ".join(str(d) for d in removed),
        )
    return removed
