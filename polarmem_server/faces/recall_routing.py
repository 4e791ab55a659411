"""Where a client sends a Recall: the server's compiled front for the shapes it answers itself,
the main port for everything else (docs/fast-front.md, "One address").

A server that runs the front names its port in the trailing metadata of every Recall answered on
the main port (api/recall_shape.FRONT_PORT_HEADER). A client learns it from its first Recall and
from then on sends a Recall to ``<the main address's host>:<that port>`` (same token and TLS)
only when `plannable()` says the front can answer it without handing it to Python; every other
Recall, and every other RPC, goes to the main port directly, so nothing pays the hand-over.
(A mode-less Recall on a namespace whose rule is strict runs in strict, which the front replays
too: the core searches strict in one call.)

If the front cannot be reached (UNAVAILABLE: down, drained, a port the client cannot reach;
UNIMPLEMENTED: not a front), the call is sent again to the main port at once, a warning says
so, and Recalls go to the main port for FRONT_RETRY_S before the front is tried again: the front
never fails a call that the main port can answer. `fast_front=False` (clients), `--no-fast-front`
/ POLARMEM_NO_FAST_FRONT=1 (CLI, `polarmem mcp`) turn this off; an explicit `recall_address`
names the front instead of learning it.

Both clients use one Router; only the calls themselves differ (sync / asyncio)."""

from __future__ import annotations

import logging
import threading
import time

import grpc

from polarmem_server.api.recall_shape import FRONT_PORT_HEADER, plannable

log = logging.getLogger("polarmem.client")
FRONT_RETRY_S = 30.0
FALLBACK_CODES = frozenset({grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.UNIMPLEMENTED})


def front_address(main_address: str, port: str) -> str | None:
    """The front's address: the main address's host with the advertised port (None when the
    main address has no host:port form to join it to, e.g. a Unix socket, or the port is bad)."""
    if main_address.startswith("unix:") or ":" not in main_address or not port.isdigit() or not 0 < int(port) < 65536:
        return None
    host = main_address.rsplit(":", 1)[0]
    return f"{host}:{port}" if host else None


class Router:
    """What a client knows of its server's front: whether to use one, its address once known,
    and until when it is considered down. `open_stub(address)` makes the stub (the client's own
    channel settings, without retries: a failed front call falls back to the main port)."""

    def __init__(self, main_address: str, enabled: bool, open_stub, recall_address: str | None = None) -> None:
        self.main_address = main_address
        self.enabled = enabled or bool(recall_address)
        self._open_stub = open_stub
        self.address: str | None = None
        self.stub = None
        self._down_until = 0.0
        self._lock = threading.Lock()  # a sync client's threads: one front channel, not one each
        if recall_address:
            self._use(recall_address)

    def _use(self, address: str) -> None:
        self.address = address
        self.stub = self._open_stub(address)

    def front_stub(self, request):
        """The front's stub when this request should go there, else None (the main port)."""
        if self.stub is None or not plannable(request):
            return None
        if self._down_until and time.monotonic() < self._down_until:
            return None
        return self.stub

    def learn(self, trailing_metadata) -> None:
        """Reads the advertised port from a main-port Recall's trailing metadata (once)."""
        if not self.enabled or self.stub is not None or not trailing_metadata:
            return
        for key, value in trailing_metadata:
            if key == FRONT_PORT_HEADER:
                address = front_address(self.main_address, str(value))
                with self._lock:
                    if address is not None and self.stub is None:
                        self._use(address)
                        log.debug("compiled Recall front at %s (advertised by %s)", address, self.main_address)
                return

    def failed(self, error: grpc.RpcError) -> bool:
        """True when `error` from the front means: send the call to the main port instead."""
        if error.code() not in FALLBACK_CODES:
            return False
        log.warning(
            "compiled Recall front at %s failed (%s: %s); sending Recalls to the main address %s, trying "
            "the front again in %.0f s",
            self.address,
            error.code().name,
            error.details(),
            self.main_address,
            FRONT_RETRY_S,
        )
        self._down_until = time.monotonic() + FRONT_RETRY_S
        return True
