"""Loading a namespace's text encoder before any call needs it.

The first Recall or Remember of a namespace whose encoder was not loaded yet used to pay the load
itself (MiniLM: 5-20 s of CPU, 22.9 s at load 9), which ran past a client's deadline with a bare
DEADLINE_EXCEEDED. The library warms the encoder in a background thread when a namespace is
created or opened instead; a call that arrives during the load waits for it (scoring/encoder.py
loads each encoder once per process, under a lock), and every later call finds it loaded.
"""

from __future__ import annotations

import logging
import threading
import time

from polarmem_server.errors import DeadlineExceeded
from polarmem_server.scoring.encoder import EncoderUnavailable, load_encoder

log = logging.getLogger("polarmem.encoder")
_started: set[str] = set()
_loading: dict[str, tuple[threading.Thread, float]] = {}  # name -> (thread, monotonic start)
_lock = threading.Lock()
ANSWER_MARGIN_S = 0.05  # answered this long before the caller's deadline, so the reason reaches it


def warm(name: str) -> threading.Thread | None:
    """Starts loading encoder `name` in the background, once per process; returns the thread
    (None when there is nothing to load or it was started before)."""
    if name in ("", "none"):
        return None
    with _lock:
        if name in _started:
            return None
        _started.add(name)
    thread = threading.Thread(target=_load, args=(name,), name=f"polarmem-encoder-warmup-{name}", daemon=True)
    _loading[name] = (thread, time.monotonic())
    thread.start()
    return thread


def wait_loaded(name: str, deadline: float | None) -> None:
    """Waits for a background load of encoder `name` still under way, up to just before the call's
    `deadline` (time.monotonic()); past it, DeadlineExceeded says the encoder is loading, instead
    of the bare DEADLINE_EXCEEDED the client's own timer would give."""
    loading = _loading.get(name)
    if loading is None or not loading[0].is_alive():
        return
    thread, started = loading
    thread.join(None if deadline is None else max(0.0, deadline - time.monotonic() - ANSWER_MARGIN_S))
    if thread.is_alive():
        raise DeadlineExceeded(
            f"the namespace's text encoder {name!r} is still loading ({time.monotonic() - started:.0f} s "
            "so far; it loads once per server start, in the background from start-up): retry "
            "in a few seconds, or give this call a longer deadline"
        )


def _load(name: str) -> None:
    try:
        started = time.monotonic()
        encoder = load_encoder(name)
        # which runtime and kernel computes it: what an operator checks first when CPU per query looks off
        kernel = getattr(encoder, "kernel", None)
        log.info(
            "text encoder %r loaded in %.1f s (runtime %s%s)",
            name,
            time.monotonic() - started,
            getattr(encoder, "runtime", type(encoder).__name__),
            f", kernel {kernel}" if kernel else "",
        )
    except EncoderUnavailable as exc:  # the first call that needs it reports this to its caller
        log.warning("text encoder %r cannot be loaded here: %s", name, exc)
    except Exception:  # noqa: BLE001 - a background load must not kill the process; the next call retries
        log.exception("loading text encoder %r failed", name)
        with _lock:
            _started.discard(name)
    finally:
        if _loading.get(name, (None,))[0] is threading.current_thread():
            _loading.pop(name, None)
