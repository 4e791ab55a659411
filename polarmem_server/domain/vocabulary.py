"""Per-namespace concept vocabulary: normalised names, aliases and dense, stable ids.

Normalisation: lower case, punctuation at word edges dropped, whitespace collapsed, and the
last word of a name singularised by simple English rules plus a short irregular list
("wine glasses" -> "wine glass", "people" -> "person", "buses" -> "bus"). Two names with the
same normal form are the same concept. Lookups made while parsing text also find a hyphenated
name written with a space ("x ray" for "x-ray") and the reverse (text.py). Aliases map a normal form to a canonical concept
("puppy" -> "dog") when the namespace declares them. Ids are dense integers assigned in order
of first use and persisted by the store, so they are stable across restarts.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from functools import lru_cache
from typing import NamedTuple

from polarmem_server import _core


def singular(word: str) -> str:
    """Singular form of one lower-case English word (simple rules and a short irregular list,
    cpp/src/text_parse.cpp: "glasses" -> glass, "headaches" -> headache, "beaches" -> beach)."""
    return _core.singular(word)


@lru_cache(maxsize=1 << 16)
def normalise(name: str) -> str:
    """Canonical key of a concept name: 'Wine  Glasses' -> 'wine glass' (the core's, which the
    compiled front binds names by too). Cached: writes name the same few concepts over and over."""
    return _core.normalise_name(name.encode("utf-8", "surrogatepass"))


class Appended(NamedTuple):
    """Concepts a write appended (nothing else changed), as the compiled front takes them."""

    first: int  # the first appended id
    names: list[str]  # every appended concept's name, ids first, first + 1, ...
    # Brings the compiled parse's keys up to date (Vocabulary.compiled_keys): a reader that
    # parses with them (the front's text plans) calls it before it takes the new names.
    compiled_keys: Callable[[], object]


class _Pushed(NamedTuple):
    """What a vocabulary's compiled keys were last brought up to."""

    table: dict[str, int]  # the lookup table (Vocabulary._lookup_table)
    version: int
    rewrites: int
    size: int  # concepts


def _spaced(key: str) -> str | None:
    """The other key a hyphenated key is found by ("x-ray" is also "x ray"); None: it has none.
    It only fills a key that no concept, alias or earlier spaced form holds."""
    return key.replace("-", " ") if "-" in key else None


def _append_keys(table: dict[str, int], names: Sequence[str], first: int) -> list[tuple[str, int]]:
    """Brings `table`, the lookup table of a vocabulary without aliases, up to date with the
    concepts `names` appended from id `first` on, as Vocabulary._lookup_table would build it
    anew; returns the entries that changed. A concept's own key always wins (over an earlier
    concept's spaced form too)."""
    changed = []
    for concept_id, name in enumerate(names, first):
        key = normalise(name)
        table[key] = concept_id
        changed.append((key, concept_id))
        spaced = _spaced(key)
        if spaced is not None and spaced not in table:
            table[spaced] = concept_id
            changed.append((spaced, concept_id))
    return changed


class Vocabulary:
    """Thread-safe name <-> id mapping of one namespace."""

    def __init__(
        self, names: Iterable[str] = (), aliases: Mapping[str, str] | None = None, shadow: bool = False
    ) -> None:
        self._lock = threading.Lock()
        self._names: list[str] = []
        self._ids: dict[str, int] = {}
        self._aliases: dict[str, str] = {}
        self._version = 0  # bumped by every change; the lookup table is rebuilt when it moves
        self._rewrites = 0  # bumped by every change but an appended concept (an alias, a truncation)
        # The lookup keys as the compiled parse reads them, and what they were last brought up
        # to (the table, the vocabulary's version, rewrites and size then), under _push_lock.
        self._compiled_keys = _core.ConceptKeys()
        self._pushed = _Pushed({}, -1, -1, 0)
        self._push_lock = threading.Lock()
        for name in names:
            self._add(name)
        for alias, target in (aliases or {}).items():
            self.add_alias(alias, target, shadow)

    def __len__(self) -> int:
        return len(self._names)

    @property
    def version(self) -> int:
        """Moves with every change (a concept, an alias, a truncation)."""
        return self._version

    @property
    def rewrites(self) -> int:
        """Moves with every change that is not an appended concept: an alias, a truncation. An
        appended concept (a new id for a normal form that named no concept) leaves every name
        that resolved before resolving to the same id; these changes may not."""
        return self._rewrites

    @property
    def names(self) -> list[str]:
        return list(self._names)

    @property
    def aliases(self) -> dict[str, str]:
        return dict(self._aliases)

    def name(self, concept_id: int) -> str:
        return self._names[concept_id]

    def lookup(self, name: str) -> int | None:
        """Id of a name, an alias or a plural form of either; None if unknown."""
        key = normalise(name)
        key = self._aliases.get(key, key)
        return self._ids.get(key)

    def ensure(self, name: str) -> tuple[int, bool]:
        """Id of `name`, adding it if new; returns (id, added)."""
        key = normalise(name)
        if not key:
            raise ValueError(f"concept name {name!r} has no letters or digits")
        known = self._ids.get(self._aliases.get(key, key))  # the common case, no lock: dict reads are atomic
        if known is not None:
            return known, False
        with self._lock:
            key = self._aliases.get(key, key)
            if key in self._ids:
                return self._ids[key], False
            return self._add(name), True

    def truncate(self, length: int) -> None:
        """Forget the concepts added after the vocabulary had `length` of them (a write that
        added them failed before it was stored)."""
        with self._lock:
            for name in self._names[length:]:
                self._ids.pop(normalise(name), None)
            del self._names[length:]
            self._version += 1
            self._rewrites += 1

    def own_id(self, name: str) -> int | None:
        """Id of the concept named `name` itself, never an alias's target (None if none)."""
        return self._ids.get(normalise(name))

    def appended_since(self, first: int) -> Appended:
        """The concepts from id `first` on, for the compiled Recall front after a write appended
        them (domain/namespace.py ChangeLock). The compiled keys are not pushed here: only a
        namespace the front binds names in (it holds its names) needs them on each write."""
        return Appended(first, self._names[first:], self.compiled_keys)

    def bind(self, name: str) -> int:
        """Id of `name` itself, adding it if new; unlike `ensure`, an alias never redirects it (the
        store's concepts are bound by their own names, an alias may shadow one since)."""
        with self._lock:
            return self._add(name)

    def add_alias(self, alias: str, target: str, shadow: bool = False) -> None:
        """`shadow`: the alias may name a concept of its own, which then stays with its states
        while lookups of the name find the target (an open vocabulary made a concept of every
        word before the alias was declared)."""
        alias_key, target_key = normalise(alias), normalise(target)
        if not alias_key or not target_key:
            raise ValueError(f"alias {alias!r} -> {target!r}: both sides need letters or digits")
        if alias_key == target_key:
            return
        if alias_key in self._ids and not shadow:
            raise ValueError(f"alias {alias!r} is already a concept of its own; remove it from the vocabulary first")
        self._aliases[alias_key] = target_key
        self._version += 1
        self._rewrites += 1

    def compiled_keys(self) -> _core.ConceptKeys:
        """Every normal form that names a concept (names, aliases, a hyphenated name also with
        spaces) -> id, as the compiled parse reads them (cpp/src/text_parse.cpp; it also tracks
        how many words the longest has), brought up to date with this vocabulary once per change:
        only the keys that changed cross into the core (an open vocabulary grows by a few words
        per write)."""
        if self._pushed.version != self._version:
            with self._push_lock:
                # Read before the names and the table: a change in between is pushed by the next call.
                version, rewrites = self._version, self._rewrites
                pushed = self._pushed
                if pushed.version < version:
                    size = len(self._names)
                    if rewrites == pushed.rewrites and not self._aliases:
                        # Only appended concepts since: their keys alone, not the whole table
                        # (an open vocabulary appends a few words per write; rebuilding its
                        # table cost 1.9 ms per write at 6,740 words, 6.4 ms at 30,000).
                        table = pushed.table
                        self._compiled_keys.set(_append_keys(table, self._names[pushed.size : size], pushed.size))
                    else:
                        table = self._lookup_table()
                        gone = [key for key in pushed.table if key not in table]
                        if gone:
                            self._compiled_keys.erase(gone)
                        self._compiled_keys.set(
                            [
                                (key, concept_id)
                                for key, concept_id in table.items()
                                if pushed.table.get(key) != concept_id
                            ]
                        )
                    self._pushed = _Pushed(table, version, rewrites, size)
        return self._compiled_keys

    def _lookup_table(self) -> dict[str, int]:
        # Every key anew; _append_keys does the same for appended concepts alone (tested equal).
        table = dict(self._ids)
        for alias, target in list(self._aliases.items()):
            # as lookup(): one step, to a concept's own key (an alias of an alias names nothing),
            # and an alias of no concept names nothing, even where it is a concept of its own
            if target in self._ids:
                table[alias] = self._ids[target]
            else:
                table.pop(alias, None)
        for key, concept_id in list(table.items()):
            spaced = _spaced(key)
            if spaced is not None:
                table.setdefault(spaced, concept_id)
        return table

    def _add(self, name: str) -> int:
        key = normalise(name)
        if key in self._ids:
            return self._ids[key]
        concept_id = len(self._names)
        self._names.append(name.strip())
        self._ids[key] = concept_id
        self._version += 1
        return concept_id
