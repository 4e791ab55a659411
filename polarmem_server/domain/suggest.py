"""Did-you-mean suggestions for names a caller got wrong: concept names absent from a namespace's
vocabulary, keys of an input line that the schema does not know.

Pure functions over strings: the closest names by difflib's ratio on normalised names, plus a
containment rule so "dogs" or "hot dogs" still find "hot dog", chosen by the core
(cpp/include/polarmem/name_suggestions.hpp, by which the core's Recall suggests names too);
callers turn the result into their own error."""

from __future__ import annotations

from collections.abc import Iterable

from polarmem_server import _core
from polarmem_server.domain.vocabulary import normalise

DEFAULT_LIMIT = 3
DEFAULT_CUTOFF = 0.6


def closest_names(
    name: str, known: Iterable[str], limit: int = DEFAULT_LIMIT, cutoff: float = DEFAULT_CUTOFF
) -> list[str]:
    """Up to `limit` names of `known` closest to `name`, best first.

    Names are compared in their normal form (lower case, singular last word), so "Dgos" finds
    "dog". A known name whose normal form contains the asked one as whole words, or the other
    way round, counts as close ("glass" -> "wine glass"). Ties keep the order of `known`."""
    if limit < 1:
        return []
    asked = normalise(name) or name.strip().lower()
    by_key: dict[str, str] = {}
    for candidate in known:
        by_key.setdefault(normalise(candidate) or candidate.strip().lower(), candidate)
    if not asked or not by_key:
        return []
    keys = list(by_key)
    chosen = _core.closest_keys(_utf8(asked), [_utf8(key) for key in keys], limit, cutoff)
    return [by_key[keys[position]] for position in chosen]


def _utf8(text: str) -> bytes:
    return text.encode("utf-8", "surrogatepass")


def did_you_mean(name: str, known: Iterable[str], limit: int = DEFAULT_LIMIT) -> str:
    """ " (did you mean 'dog'?)" / " (did you mean 'dog' or 'hot dog'?)", or "" when nothing is close."""
    close = closest_names(name, known, limit)
    if not close:
        return ""
    quoted = [repr(c) for c in close]
    listed = quoted[0] if len(quoted) == 1 else ", ".join(quoted[:-1]) + " or " + quoted[-1]
    return f" (did you mean {listed}?)"
