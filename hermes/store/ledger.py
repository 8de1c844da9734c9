"""The global capability ledger: facts learned about a (provider, host, model), kept forever.

A rejected carrier field, a suppressed blob hash or a token factor costs one failed request
to learn; the ledger makes sure a *new* session need not pay it again (a per-session memory
alone would). Keys are normalised: provider lower-cased and stripped, host lower-cased, model
stripped — one model's rejection on a gateway never strips carriers from its sibling models.

These functions run inside the caller's transaction; the stores own the transactions. The SQL
is portable (``?`` placeholders; ``PgStore`` adapts them), so both backends share these rules.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import orjson

from .records import Capability

__all__ = ["forget", "learn", "list_capabilities", "lookup", "merge_value", "norm_key"]


def norm_key(provider: str, host: str, model: str) -> tuple[str, str, str]:
    """The ledger key as stored: provider and host lower-cased, all three stripped."""
    return provider.strip().lower(), host.strip().lower(), model.strip()


def _as_json_value(value: Any) -> Any:
    """Sets become sorted lists (JSON has no sets); tuples become lists."""
    if isinstance(value, set | frozenset):
        try:
            return sorted(value)
        except TypeError:
            return sorted(value, key=repr)
    if isinstance(value, tuple):
        return list(value)
    return value


def merge_value(old: Any, new: Any) -> Any:
    """Set-like values only grow (a learned rejection is never un-learned by re-learning);
    anything else is replaced. Existing order is kept; new items are appended."""
    new = _as_json_value(new)
    if isinstance(old, list) and isinstance(new, list):
        return old + [x for x in new if x not in old]
    return new


def learn(
    c: Any,
    key: tuple[str, str, str],
    kind: str,
    value: Any,
    evidence: Mapping[str, Any],
    now: float,
) -> bool:
    """Record ``value`` for ``key``/``kind``; True when the stored value changed.

    False (nothing new) is the signal callers use to stop retrying: "only new keys count".
    """
    row = c.execute(
        "SELECT value FROM capabilities WHERE provider = ? AND host = ? AND model = ? AND kind = ?",
        (*key, kind),
    ).fetchone()
    ev = orjson.dumps(dict(evidence)).decode()
    if row is None:
        merged = _as_json_value(value)
        c.execute(
            "INSERT INTO capabilities (provider, host, model, kind, value, evidence, created, updated)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (*key, kind, orjson.dumps(merged).decode(), ev, now, now),
        )
        return True
    old = orjson.loads(row[0])
    merged = merge_value(old, value)
    if merged == old:
        return False
    c.execute(
        "UPDATE capabilities SET value = ?, evidence = ?, updated = ?"
        " WHERE provider = ? AND host = ? AND model = ? AND kind = ?",
        (orjson.dumps(merged).decode(), ev, now, *key, kind),
    )
    return True


def lookup(c: Any, key: tuple[str, str, str]) -> dict[str, Any]:
    """Everything learned for one (provider, host, model): ``{kind: value}``."""
    rows = c.execute(
        "SELECT kind, value FROM capabilities WHERE provider = ? AND host = ? AND model = ?"
        " ORDER BY kind",
        key,
    ).fetchall()
    return {kind: orjson.loads(value) for kind, value in rows}


def list_capabilities(c: Any) -> list[Capability]:
    """The whole ledger, for ``hermes capabilities`` style inspection."""
    rows = c.execute(
        "SELECT provider, host, model, kind, value, evidence, created, updated FROM capabilities"
        " ORDER BY provider, host, model, kind"
    ).fetchall()
    return [
        Capability(p, h, m, k, orjson.loads(v), orjson.loads(e), cr, up)
        for p, h, m, k, v, e, cr, up in rows
    ]


def forget(
    c: Any, provider: str | None, host: str | None, model: str | None
) -> int:
    """Delete learned facts; ``None`` matches anything. Returns the number of rows removed."""
    where: list[str] = []
    args: list[str] = []
    p, h, m = norm_key(provider or "", host or "", model or "")
    for col, given, val in (("provider", provider, p), ("host", host, h), ("model", model, m)):
        if given is not None:
            where.append(f"{col} = ?")
            args.append(val)
    sql = "DELETE FROM capabilities" + (" WHERE " + " AND ".join(where) if where else "")
    return c.execute(sql, args).rowcount
