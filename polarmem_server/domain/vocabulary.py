"""Per-namespace concept vocabulary: normalised names, aliases and dense, stable ids.

Normalisation: lower case, punctuation at word edges dropped, whitespace collapsed, and the
last word of a name singularised by simple English rules plus a short irregular list
("wine glasses" -> "wine glass", "people" -> "person", "buses" -> "bus"). Two names with the
same normal form are the same concept. Lookups made while parsing text also find a hyphenated
name written with a space ("x ray" for "x-ray") and the reverse (text.py). Aliases map a normal
form to a canonical concept ("puppy" -> "dog") when the namespace declares them. Ids are dense
integers assigned in order of first use and persisted by the store, so they are stable across
restarts.

The table is the core's (cpp/include/polarmem/vocabulary.hpp): one object holds the names, the
aliases and the keys the compiled parse reads, and the compiled front binds and names concepts
from the same object, so a concept a write appends is everyone's at once.
"""

from __future__ import annotations

from functools import lru_cache

from polarmem_server import _core

# Thread-safe name <-> id table of one namespace: Vocabulary(names=(), aliases=None, shadow=False);
# lookup, own_id, ensure, bind, add_alias, name, names, names_from, aliases, version, rewrites.
Vocabulary = _core.Vocabulary


@lru_cache(maxsize=1 << 16)
def normalise(name: str) -> str:
    """Canonical key of a concept name: 'Wine  Glasses' -> 'wine glass' (the core's, which the
    compiled front binds names by too). Cached: writes name the same few concepts over and over."""
    return _core.normalise_name(name.encode("utf-8", "surrogatepass"))
