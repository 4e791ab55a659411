"""The compiled front (cpp/front, module ``polarmem_server._front``) as the server runs it.

``polarmem serve`` puts it on the address clients use (setting ``front``, default auto; with
``--processes`` > 1 each process runs one on the shared port; the Python listener takes the
address where the front was not built or with the Milvus backend). Written in C++, it plans and answers Recalls from the core without the
interpreter, and hands every other call — a Recall it cannot answer, any other method, unary or
streaming (cpp/front/call_proxy.cpp) — to the Python listener over a private Unix socket with the
caller's metadata, deadline and address (``x-polarmem-peer``); the answer comes back exactly as
the library gave it.

It answers a Recall through the one core entry (library/core_recall.py): the request planned from
its namespace's view and answered by the core, or refused by it naming the field. The Python
listener hands it the views; a Recall the entry leaves to the library is forwarded, and the
servicer does what only Python can (make the view, learn names, read records back, add full
items) and asks the same entry again. Tokens: the front checks bearer tokens like
api/auth.py (SHA-256, constant time); a call it cannot admit goes to the library, which refuses
it in its own words. docs/fast-front.md has the measurements and the limits.
"""

from __future__ import annotations

from pathlib import Path

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

from polarmem_server.api.auth import METHOD_ROLES
from polarmem_server.api.metrics import bucket_histogram
from polarmem_server.library import CoreRecall, unavailable_reason  # noqa: F401 - re-exported

PEER_HEADER = "x-polarmem-peer"


def caller_peer(context) -> str:
    """The caller's address: the front's word for it (cpp/front/call_proxy.hpp kPeerHeader) when
    the call came over the private socket, where the front strips any the caller sent."""
    peer = context.peer()
    if peer.startswith("unix:"):
        for key, value in context.invocation_metadata() or ():
            if key == PEER_HEADER:
                return value
    return peer


class FastFrontHost:
    """Starts the front, hands it tokens, exports its counters, stops it."""

    def __init__(
        self,
        address: str,
        upstream: str,
        core: CoreRecall,
        authorizer,
        tls_cert: str = "",
        tls_key: str = "",
        max_in_flight: int = 0,
        max_receive_bytes: int = 4 << 20,
        reuse_port: bool = False,
        namespace_labels: bool = False,
        replica: bool = False,
        applied_position: int = 0,
    ) -> None:
        """Listens on ``address`` at once, answering Recalls from ``core``'s views and handing
        every other call to ``upstream`` (the server starts it before the store is open, so health
        answers NOT_SERVING there meanwhile; until the core is attached it holds no views)."""
        # not `from polarmem_server import _front`: with no stub of it, mypy calls that a missing attribute
        import polarmem_server._front as _front

        cert = Path(tls_cert).read_text() if tls_cert else ""
        key = Path(tls_key).read_text() if tls_key else ""
        self.views = core.views
        self.front = _front.FastFront(
            address,
            upstream,
            self.views,
            cert,
            key,
            max_in_flight,
            max_receive_bytes,
            reuse_port,
            namespace_labels,
            replica,
            applied_position,
        )
        self._authorizer = authorizer
        self.refresh_grants()

    @property
    def port(self) -> int:
        return self.front.port

    def refresh_grants(self) -> None:
        """Hands the front the tokens in force (at start and after each reload)."""
        self.front.set_grants(
            [
                (grant.digest, sorted(grant.namespaces), grant.allows_role(METHOD_ROLES["Remember"]))
                for grant in self._authorizer.grants
                if grant.allows_role(METHOD_ROLES["Recall"])
            ]
        )

    def shutdown(self, grace_seconds: float) -> None:
        self.front.shutdown(grace_seconds)


class FastFrontCollector:
    """The front's own counters, read at scrape time: how its calls split (native, handed over,
    refused, ...). Its calls' codes and latencies join the RPC series, and its Recalls' hits and
    suppressed items the Recall series, through ServerMetrics.attach_front."""

    def __init__(self, host: FastFrontHost) -> None:
        self._host = host

    def collect(self):
        stats = self._host.front.stats()
        calls = CounterMetricFamily(
            "polarmem_fast_front_recalls", "Recalls through the compiled front, by path", labels=["path"]
        )
        calls.add_metric(["native"], stats["native"])
        calls.add_metric(["forwarded"], stats["forwarded"])
        calls.add_metric(["refused"], stats["refused"])
        calls.add_metric(["overloaded"], stats["overloaded"])
        yield calls
        yield GaugeMetricFamily(
            "polarmem_fast_front_in_flight", "Recalls in the compiled front now", value=stats["in_flight"]
        )
        yield GaugeMetricFamily(
            "polarmem_fast_front_namespaces",
            "Namespaces whose Recalls the compiled front plans itself",
            value=self._host.views.size,
        )
        yield bucket_histogram(
            "polarmem_fast_front_latency_seconds",
            "Time the front took for the Recalls it answered itself",
            stats["latency_bounds"],
            stats["latency_counts"],
            stats["latency_sum"],
        )
        remembers = CounterMetricFamily(
            "polarmem_fast_front_remembers",
            "Remembers through the compiled front, by path (native: stored by the core; failed: the store refused)",
            labels=["path"],
        )
        for path, count in stats["remember"].items():
            remembers.add_metric([path], count)
        yield remembers
        yield bucket_histogram(
            "polarmem_fast_front_remember_latency_seconds",
            "Time the front took for the notes it stored itself",
            stats["latency_bounds"],
            stats["remember_latency_counts"],
            stats["remember_latency_sum"],
        )
