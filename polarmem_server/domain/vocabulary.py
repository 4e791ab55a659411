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

import re
import threading
from collections.abc import Iterable, Mapping
from functools import lru_cache

_IRREGULAR = {
    "people": "person", "persons": "person", "men": "man", "women": "woman", "children": "child",
    "mice": "mouse", "knives": "knife", "teeth": "tooth", "feet": "foot", "geese": "goose",
    "leaves": "leaf", "wolves": "wolf", "shelves": "shelf", "loaves": "loaf", "halves": "half",
    "scissors": "scissors", "glasses": "glass", "skis": "ski", "buses": "bus", "cacti": "cactus",
}
_NO_STRIP = ("ss", "us", "is", "ous")
# Plurals of words that end in -che: their "es" is not the plural's ("beaches" -> beach, but
# "headaches" -> headache). An open vocabulary binds the text's plural's singular, so a query's
# singular must reach the same key.
_E_PLURALS = ("aches", "niches", "cliches", "quiches", "caches", "avalanches", "psyches", "creches", "douches")
_ACH_PLURALS = ("beaches", "peaches", "coaches", "roaches", "reaches", "teaches", "breaches", "poaches",
                "approaches", "broaches", "bleaches")
_WORD = re.compile(r"[a-z0-9]+(?:['-][a-z0-9]+)*")


def singular(word: str) -> str:
    """Singular form of one lower-case English word (simple rules, good enough for concept names)."""
    if word in _IRREGULAR:
        return _IRREGULAR[word]
    if len(word) <= 3:
        return word
    if word.endswith("ies") and len(word) > 4:
        return word[:-3] + "y"
    if (word.endswith(_E_PLURALS) and not word.endswith(_ACH_PLURALS)) or (word.endswith("zes") and not word.endswith("zzes")):
        return word[:-1]  # "headaches" -> headache, "wheezes" -> wheeze, "sizes" -> size
    if word.endswith(("sses", "shes", "ches", "xes", "zes")):
        return word[:-2]
    if word.endswith("s") and not word.endswith(_NO_STRIP):
        return word[:-1]
    return word


def tokens(text: str) -> list[str]:
    return _WORD.findall(text.lower())


@lru_cache(maxsize=1 << 16)
def normalise(name: str) -> str:
    """Canonical key of a concept name: 'Wine  Glasses' -> 'wine glass'. Cached: writes name
    the same few concepts over and over."""
    words = tokens(name)
    if not words:
        return ""
    words[-1] = singular(words[-1])
    return " ".join(words)


class Vocabulary:
    """Thread-safe name <-> id mapping of one namespace."""

    def __init__(self, names: Iterable[str] = (), aliases: Mapping[str, str] | None = None,
                 shadow: bool = False) -> None:
        self._lock = threading.Lock()
        self._names: list[str] = []
        self._ids: dict[str, int] = {}
        self._aliases: dict[str, str] = {}
        self._version = 0  # bumped by every change; the lookup table is rebuilt when it moves
        self._rewrites = 0  # bumped by every change but an appended concept (an alias, a truncation)
        self._keys: tuple[dict[str, int], int, int] | None = None  # (keys(), longest, version)
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

    def own_names(self, first: int = 0) -> tuple[list[str], list[int]]:
        """The concepts from id `first` on whose own name (as written here) resolves to them,
        names and ids: the names the compiled Recall front may bind (an alias may shadow one)."""
        names, ids = [], []
        for concept_id, name in enumerate(self._names[first:], first):
            if self.lookup(name) == concept_id:
                names.append(name)
                ids.append(concept_id)
        return names, ids

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

    def keys(self) -> dict[str, int]:
        """Every normal form that names a concept (names and aliases) -> id. Built once per
        vocabulary change (every text parse reads it); callers must not modify it."""
        return self._lookup_table()[0]

    @property
    def longest_name_words(self) -> int:
        """Words in the longest name or alias: how far a mention match must look ahead."""
        return self._lookup_table()[1]

    def _lookup_table(self) -> tuple[dict[str, int], int]:
        # Stamped with the version it was built from, so a table built by a reader while a
        # writer changed the vocabulary is never mistaken for the current one.
        version = self._version
        cached = self._keys
        if cached is None or cached[2] != version:
            table = dict(self._ids)
            for alias, target in list(self._aliases.items()):
                if target in table:
                    table[alias] = table[target]
            for key, concept_id in list(table.items()):  # "x-ray" is also found as "x ray"
                if "-" in key:
                    table.setdefault(key.replace("-", " "), concept_id)
            cached = (table, max((len(k.split()) for k in table), default=0), version)
            self._keys = cached
        return cached[0], cached[1]

    def _add(self, name: str) -> int:
        key = normalise(name)
        if key in self._ids:
            return self._ids[key]
        concept_id = len(self._names)
        self._names.append(name.strip())
        self._ids[key] = concept_id
        self._version += 1
        return concept_id
