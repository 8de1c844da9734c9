"""Tool-call ids per route: map stored ids to what the target accepts, at render time only.

Providers mint ids in their own shapes (OpenAI ``call_…``, Anthropic ``toolu_…``, Kimi
``functions.read_file:0``, Mistral nine base62 characters) and some refuse the others':
Mistral wants exactly 9 characters of ``[A-Za-z0-9]``; Anthropic (direct, Vertex, Foundry)
wants ``^[a-zA-Z0-9_-]+$``. A session that moves between routes therefore sends ids the target
refuses unless they are rewritten. The rules here:

* stored history keeps the original ids; only the request is rewritten (``replay`` applies the
  map to the planned messages);
* an id the rule already accepts is sent unchanged (a route's own ids round-trip byte-exact);
* a mapped id depends only on the original id (sha256, base62), so a call and its result get
  the same one and the mapping is stable from one request of a session to the next;
* within one request it is collision-free: a mapped id never equals an id sent unchanged or
  another mapped id (a clash, about 1 in 10^16 for Mistral, is resolved by re-hashing with a
  counter in order of first appearance, so earlier turns keep their ids as history grows).
"""

from __future__ import annotations

import hashlib
import re
from bisect import bisect_right
from collections.abc import Iterable, Mapping
from collections.abc import Set as AbstractSet
from functools import lru_cache

__all__ = ["base62", "base62_prefix", "extend_id_map", "id_map", "valid", "wire_id"]

_ALPHABET = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
_ANTHROPIC = re.compile(r"[a-zA-Z0-9_-]+")
_NOT_ANTHROPIC = re.compile(r"[^a-zA-Z0-9_-]")
_MISTRAL = re.compile(r"[a-zA-Z0-9]{9}")
_POWERS = [62**k for k in range(46)]
"""62^0 … 62^45: a sha256 digest has at most 43 base62 digits."""


def base62(data: bytes) -> str:
    """``data`` as a base62 number (most significant digit first)."""
    n, out = int.from_bytes(data, "big"), []
    while n:
        n, r = divmod(n, 62)
        out.append(_ALPHABET[r])
    return "".join(reversed(out)) or "0"


def base62_prefix(data: bytes, width: int) -> str:
    """``base62(data)[:width]`` without writing out the other digits: the leading ``width``
    digits of a number are those of its quotient by 62^(digits - width)."""
    n = int.from_bytes(data, "big")
    digits = bisect_right(_POWERS, n)  # how many base62 digits n has
    return base62((n // _POWERS[max(0, digits - width)]).to_bytes(33, "big"))[:width]


def valid(rule: str, call_id: str) -> bool:
    """Whether ``rule`` accepts ``call_id`` as it is."""
    if rule == "mistral":
        return _MISTRAL.fullmatch(call_id) is not None
    if rule == "anthropic":
        return _ANTHROPIC.fullmatch(call_id) is not None
    return True


@lru_cache(maxsize=1 << 16)
def wire_id(rule: str, call_id: str, attempt: int = 0) -> str:
    """The id ``call_id`` becomes under ``rule`` (``attempt`` > 0 only to step around a clash).
    Cached: a session's request maps the same ids again on every step."""
    raw = hashlib.sha256(f"{call_id}\0{attempt}".encode("utf-8", "surrogatepass")).digest()
    if rule == "mistral":
        return base62_prefix(raw, 9)
    # readable where possible: "functions.read_file:0" -> "functions_read_file_0_h7Gk2QpX"
    digest = base62_prefix(raw, 8)
    return f"{_NOT_ANTHROPIC.sub('_', call_id)[:48]}_{digest}".lstrip("_") or digest


def id_map(rule: str, ids: Iterable[str]) -> dict[str, str]:
    """original → wire id for every id in ``ids`` (in history order) that ``rule`` refuses."""
    if rule == "any":
        return {}
    grown = extend_id_map(rule, {}, set(), ids)
    assert grown is not None  # nothing was mapped before: nothing to clash with
    return grown[0]


def extend_id_map(rule: str, mapping: Mapping[str, str], taken: AbstractSet[str],
                  fresh: Iterable[str]) -> tuple[dict[str, str], set[str]] | None:
    """``id_map(rule, ids + fresh)`` and the wire ids it took, from ``mapping = id_map(rule, ids)``
    and ``taken`` (the ids it took: those sent as they are and the mapped ones), or None when a
    fresh id sent as it is equals an id an earlier mapping chose, which the whole history
    would have stepped around: then map the whole history again."""
    order = [i for i in dict.fromkeys(fresh) if i not in mapping]
    as_is = {i for i in order if valid(rule, i)}
    if mapping and not as_is.isdisjoint(mapping.values()):
        return None
    out, took = dict(mapping), set(taken) | as_is
    for original in order:
        if original in took:
            continue
        attempt, mapped = 0, wire_id(rule, original)
        while mapped in took:
            attempt += 1
            mapped = wire_id(rule, original, attempt)
        took.add(mapped)
        out[original] = mapped
    return out, took
