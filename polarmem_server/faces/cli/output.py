"""How client commands print: aligned tables and a progress line (rate, ETA) for people,
JSON (the response message, proto field names) for programs."""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Sequence
from typing import Any, TextIO

from google.protobuf.json_format import MessageToDict


def as_dict(message) -> dict[str, Any]:
    """A response message as plain JSON values (proto field names, defaults included)."""
    return MessageToDict(message, preserving_proto_field_name=True, always_print_fields_with_no_presence=True)


def print_json(value: Any, out: TextIO | None = None) -> None:
    if hasattr(value, "DESCRIPTOR"):
        value = as_dict(value)
    print(json.dumps(value, indent=2, ensure_ascii=False), file=out or sys.stdout)


def table(
    headers: Sequence[str], rows: Sequence[Sequence[Any]], out: TextIO | None = None, right: Sequence[int] = ()
) -> None:
    """Columns padded to their widest cell; columns listed in `right` are right-aligned."""
    cells = [[str(h) for h in headers]] + [["" if c is None else str(c) for c in row] for row in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]
    out = out or sys.stdout
    for n, row in enumerate(cells):
        line = "  ".join(c.rjust(w) if i in right else c.ljust(w) for i, (c, w) in enumerate(zip(row, widths)))
        print(line.rstrip(), file=out)
        if n == 0:
            print("  ".join("-" * w for w in widths), file=out)


def short(text: str, width: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"


def names(values: Sequence[str], limit: int = 8) -> str:
    values = list(values)
    if not values:
        return "-"
    shown = ", ".join(values[:limit])
    return shown + (f" (+{len(values) - limit} more)" if len(values) > limit else "")


class Progress:
    """A one-line progress report on stderr: done / total, failures, rate and ETA. Drawn in place
    on a terminal; elsewhere (a log file, a pipe) silent, so logs hold only the summary."""

    def __init__(
        self, total: int | None, what: str = "items", stream: TextIO | None = None, enabled: bool | None = None
    ) -> None:
        self.total, self.what = total, what
        self.stream = stream or sys.stderr
        self.enabled = self.stream.isatty() if enabled is None else enabled
        self.started = time.perf_counter()
        self.done = self.failed = 0
        self._drawn = False

    def update(self, done: int, failed: int) -> None:
        self.done, self.failed = done, failed
        if not self.enabled:
            return
        elapsed = max(time.perf_counter() - self.started, 1e-9)
        rate = done / elapsed
        if self.total:
            width = 24
            filled = int(width * min(done, self.total) / self.total)
            eta = (self.total - done) / rate if rate > 0 else float("inf")
            head = f"[{'#' * filled}{'.' * (width - filled)}] {done}/{self.total} {self.what}"
            tail = f", ETA {format_seconds(eta)}"
        else:
            head, tail = f"{done} {self.what}", ""
        self.stream.write(f"\r{head}, {failed} failed, {rate:,.0f}/s{tail}   ")
        self.stream.flush()
        self._drawn = True

    def pause(self) -> None:
        """Ends the drawn line, so a message can be printed below it."""
        self.close()

    def close(self) -> None:
        if self._drawn:
            self._drawn = False
            self.stream.write("\n")
            self.stream.flush()

    @property
    def elapsed_s(self) -> float:
        return time.perf_counter() - self.started


def format_seconds(seconds: float) -> str:
    if seconds == float("inf"):
        return "?"
    seconds = int(round(seconds))
    if seconds < 60:
        return f"{seconds}s"
    if seconds < 3600:
        return f"{seconds // 60}m{seconds % 60:02d}s"
    return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"
