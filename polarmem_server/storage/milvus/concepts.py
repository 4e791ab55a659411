"""Concept ids agreed between processes without a coordinator, on Milvus alone.

The library needs *dense* ids (0, 1, 2, ... in order of first use; domain/vocabulary.py), and
Milvus has no transaction or compare-and-set, so the ids are claimed and confirmed:

1. Read the confirmed bindings of the namespace (Strong). Names already bound are done.
2. Claim the next ids n, n+1, ... for the new names: one insert of unconfirmed rows tagged with
   this call's nonce.
3. Read every row claiming those ids (Strong). If no other nonce claims any of them, the claim
   won: confirm it (a second insert of the same rows, confirmed). Otherwise delete this claim,
   wait a random moment and start again from 1.

At most one claimant of an id can win: if A and B both claim id n, A's verifying read misses
B's claim only if B's insert is later than that read, and then B's verifying read (later still)
sees A's claim. Ids are confirmed only after every lower id is (a claim for n is made only
when 0..n-1 are confirmed), so the confirmed bindings stay dense. Two processes adding the
same new name at once claim the same id for it; one wins, the other's retry finds it bound.

Limit: a process that dies between claiming and confirming blocks its ids until another
claimant has seen the claim for ``STALE_CLAIM_S``; it then deletes the claim's unconfirmed
rows and starts again.
"""

from __future__ import annotations

import random
import time
import uuid
from collections.abc import Callable, Sequence

from polarmem_server.domain.vocabulary import normalise
from polarmem_server.errors import InvalidArgument, Unavailable, quoted
from polarmem_server.storage.milvus.expressions import literal
from polarmem_server.storage.milvus.schema import PLACEHOLDER_DIM

MAX_ATTEMPTS = 50
STALE_CLAIM_S = 30.0
PAGE = 16_384  # Milvus's largest query window


class ConceptBindings:
    """Claims and reads concept bindings in the shared concepts collection."""

    def __init__(self, collection, call: Callable, timeout_s: int) -> None:
        self.collection = collection
        self._t = {"timeout": timeout_s}
        self.call = call  # Connection.call: translates Milvus failures
        self._stale_since: dict[tuple[str, str], float] = {}

    def bound(self, ns: str) -> list[tuple[int, str]]:
        """Confirmed (id, display name) of the namespace, by id."""
        rows = self._rows(f"ns == {literal(ns)} and confirmed == true", ["cid", "name"])
        return sorted({(int(r["cid"]), r["name"]) for r in rows})

    def bound_everywhere(self) -> dict[str, list[tuple[int, str]]]:
        """Every namespace's confirmed bindings, by namespace, in one paged Strong read (a process
        opening 10,000 namespaces at start would otherwise wait for the time tick 10,000 times)."""

        def read() -> list[dict]:
            rows: list[dict] = []
            iterator = self.collection.query_iterator(
                batch_size=PAGE // 4,
                expr="confirmed == true",
                output_fields=["ns", "cid", "name"],
                consistency_level="Strong",
                **self._t,
            )
            while batch := iterator.next():
                rows.extend(batch)
            iterator.close()
            return rows

        found: dict[str, set[tuple[int, str]]] = {}
        for row in self.call(read, "read concepts"):
            found.setdefault(row["ns"], set()).add((int(row["cid"]), row["name"]))
        return {ns: sorted(pairs) for ns, pairs in found.items()}

    def bound_from(self, ns: str, first_id: int) -> list[tuple[int, str]]:
        """Confirmed bindings with id >= first_id, by id (a lagging process catching up)."""
        rows = self._rows(f"ns == {literal(ns)} and confirmed == true and cid >= {int(first_id)}", ["cid", "name"])
        return sorted({(int(r["cid"]), r["name"]) for r in rows})

    def allocate(self, ns: str, names: Sequence[str]) -> list[int]:
        keys = []
        for name in names:
            key = normalise(name)
            if not key:
                raise InvalidArgument(f"concept name {quoted(name)} has no letters or digits")
            keys.append(key)
        for _ in range(MAX_ATTEMPTS):
            bound = self.bound(ns)
            by_key = {normalise(name): cid for cid, name in bound}
            new: dict[str, str] = {}  # key -> display name, first spelling wins
            for name, key in zip(names, keys):
                if key not in by_key:
                    new.setdefault(key, name.strip())
            if not new:
                return [by_key[k] for k in keys]
            if self._claim(ns, len(bound), new):
                continue  # won: the next round reads the confirmed bindings
            time.sleep(random.uniform(0.05, 0.3))
        raise Unavailable(
            f"could not bind new concepts of namespace {quoted(ns)} after {MAX_ATTEMPTS} attempts "
            "(many processes adding concepts at once); retry"
        )

    def delete_namespace(self, ns: str) -> None:
        self.call(lambda: self.collection.delete(f"ns == {literal(ns)}", **self._t), "delete concepts")

    # ---- the protocol -----------------------------------------------------------------------

    def _claim(self, ns: str, first: int, new: dict[str, str]) -> bool:
        nonce = uuid.uuid4().hex
        ids = list(range(first, first + len(new)))
        rows = [
            [ns] * len(ids),
            ids,
            list(new),
            list(new.values()),
            [nonce] * len(ids),
            [False] * len(ids),
            [[0.0] * PLACEHOLDER_DIM] * len(ids),
        ]
        self.call(lambda: self.collection.insert(rows, **self._t), "claim concept ids")
        claims = self._rows(f"ns == {literal(ns)} and cid in {ids} and confirmed == false", ["claim", "pk"])
        rivals = {r["claim"] for r in claims} - {nonce}
        if rivals and not self._all_stale(ns, rivals):
            self.call(lambda: self.collection.delete(f"claim == {literal(nonce)}", **self._t), "withdraw concept claim")
            return False
        if rivals:  # a dead process's claims: remove them (never a binding) and start again
            for rival in rivals:
                stale = f"claim == {literal(rival)} and confirmed == false"
                self.call(lambda: self.collection.delete(stale, **self._t), "remove stale claim")
            self.call(lambda: self.collection.delete(f"claim == {literal(nonce)}", **self._t), "withdraw concept claim")
            return False
        rows[5] = [True] * len(ids)
        self.call(lambda: self.collection.insert(rows, **self._t), "confirm concept ids")
        return True

    def _all_stale(self, ns: str, rivals: set[str]) -> bool:
        now = time.monotonic()
        stale = True
        for rival in rivals:
            since = self._stale_since.setdefault((ns, rival), now)
            stale = stale and now - since >= STALE_CLAIM_S
        return stale

    def _rows(self, expr: str, fields: list[str]) -> list[dict]:
        rows = self.call(
            lambda: self.collection.query(
                expr, output_fields=fields, limit=PAGE, consistency_level="Strong", **self._t
            ),
            "read concepts",
        )
        if len(rows) >= PAGE:
            raise Unavailable(f"more than {PAGE} concept rows match {expr}; the Milvus backend's vocabulary limit")
        return rows
