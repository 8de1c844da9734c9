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
from collections.abc import Iterable

__all__ = ["base62", "id_map", "valid", "wire_id"]

_ALPHABET = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
_ANTHROPIC = re.compile(r"[a-zA-Z0-9_-]+")
_NOT_ANTHROPIC = re.compile(r"[^a-zA-Z0-9_-]")
_MISTRAL = re.compile(r"[a-zA-Z0-9]{9}")


def base62(data: bytes) -> str:
    """``data`` as a base62 number (most significant digit first)."""
    n, out = int.from_bytes(data, "big"), []
    while n:
        n, r = divmod(n, 62)
        out.append(_ALPHABET[r])
    return "".join(reversed(out)) or "0"


def valid(rule: str, call_id: str) -> bool:
    """Whether ``rule`` accepts ``call_id`` as it is."""
    if rule == "mistral":
        return _MISTRAL.fullmatch(call_id) is not None
    if rule == "anthropic":
        return _ANTHROPIC.fullmatch(call_id) is not None
    return True


def wire_id(rule: str, call_id: str, attempt: int = 0) -> str:
    """The id ``call_id`` becomes under ``rule`` (``attempt`` > 0 only to step around a clash)."""
    digest = base62(hashlib.sha256(f"{call_id}\0{attempt}".encode("utf-8", "surrogatepass")).digest())
    if rule == "mistral":
        return digest[:9]
    # readable where possible: "functions.read_file:0" -> "functions_read_file_0_h7Gk2QpX"
    return f"{_NOT_ANTHROPIC.sub('_', call_id)[:48]}_{digest[:8]}".lstrip("_") or digest[:8]


def id_map(rule: str, ids: Iterable[str]) -> dict[str, str]:
    """original → wire id for every id in ``ids`` (in history order) that ``rule`` refuses."""
    if rule == "any":
        return {}
    order = list(dict.fromkeys(ids))
    taken = {i for i in order if valid(rule, i)}
    out: dict[str, str] = {}
    for original in order:
        if original in taken:
            continue
        attempt, mapped = 0, wire_id(rule, original)
        while mapped in taken:
            attempt += 1
            mapped = wire_id(rule, original, attempt)
        taken.add(mapped)
        out[original] = mapped
    return out
