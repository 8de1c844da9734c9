"""What the pages show, computed from the store and the request log (no HTTP here).

Three view models:

* ``session_rows`` — the searchable session list;
* ``timeline`` — one session's messages in order with branch points and checkpoints placed
  where they happen (built on ``views.session_view``, so blobs are kind, size and hash only);
* ``request_matrix`` — assistant turns × the carriers each request used, from the planner's
  per-message decisions that ``logs.plan_summary`` records.

Nothing here returns a blob value or a key; templates escape every string they print.
"""

from __future__ import annotations

import bisect
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..core.errors import StoreError
from ..store.requestlog import carried_summary
from ..store.views import session_view

if TYPE_CHECKING:
    from ..store import SessionStore

__all__ = ["Cell", "Column", "Matrix", "live_record", "request_matrix", "session_records", "session_rows", "timeline",
           "when"]

ACTION_LABEL = {"field": "sent", "native": "sent", "pad": "padded", "text": "text", "drop": "dropped"}
"""Planner action → the chip a reader sees: sent as is, a must-echo placeholder, reduced to
readable text, or left out."""


def when(ts: float | None) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(ts)) if ts else ""


# ----------------------------------------------------------------------------- sessions


def session_rows(store: SessionStore, query: str = "", limit: int = 500) -> list[dict[str, Any]]:
    """Newest first; ``query`` matches (case-insensitively) id, title, route, model or parent."""
    q = query.strip().lower()
    rows = []
    for s in store.list_sessions(limit, include_empty=False):
        hay = " ".join((s.id, s.title, s.provider, s.model, s.parent_id or "")).lower()
        if q and q not in hay:
            continue
        rows.append({"id": s.id, "title": s.title, "provider": s.provider, "model": s.model,
                     "turns": s.turn_count, "messages": s.message_count, "updated": when(s.updated),
                     "parent_id": s.parent_id, "branch_of_seq": s.branch_of_seq, "search": hay})
    return rows


# ----------------------------------------------------------------------------- timeline


def _reasoning_item(part: Mapping[str, Any]) -> dict[str, Any]:
    o = part.get("origin") or {}
    blob = part.get("blob")
    native = part.get("native") or {}
    natives = []
    for name, value in native.items():
        if isinstance(value, dict) and "sha256" in value:
            natives.append({"name": name, "chars": value["chars"], "sha256": value["sha256"]})
        elif name == "tool_signatures":
            natives += [{"name": f"tool_signature {cid}", "chars": s["chars"], "sha256": s["sha256"]}
                        for cid, s in value]
        elif name == "reasoning_text":
            natives.append({"name": name, "chars": len(value) if isinstance(value, str) else value.get("chars", 0),
                            "sha256": ""})
    return {"kind": "reasoning", "text": part.get("text", ""), "chars": len(part.get("text", "")),
            "origin": f"{o.get('provider')}@{o.get('host')}/{o.get('model')}", "wire": o.get("wire", ""),
            "blob": blob, "natives": natives, "item_id": part.get("item_id")}


def _route_of(parts: Iterable[Mapping[str, Any]]) -> dict[str, str] | None:
    """The route an assistant message came from, read off its reasoning's origin: the session
    row holds only the current route, and a session may have switched on any turn."""
    for p in parts:
        if p["kind"] == "reasoning" and (o := p.get("origin") or {}).get("provider"):
            return {"provider": str(o["provider"]), "model": str(o.get("model") or "")}
    return None


def timeline(store: SessionStore, session_id: str, *, children_limit: int = 1000) -> dict[str, Any]:
    """The session view plus, after each message, the branches taken from it (and, for a
    branch, the point it left its parent)."""
    view = session_view(store, session_id, full=True)
    info = view["session"]
    branches: dict[int, list[dict[str, Any]]] = {}
    for s in store.list_sessions(children_limit):
        if s.parent_id == info["id"] and s.branch_of_seq is not None:
            branches.setdefault(s.branch_of_seq, []).append(
                {"id": s.id, "title": s.title, "provider": s.provider, "model": s.model, "turns": s.turn_count})
    items = []
    for m in view["messages"]:
        parts = []
        for p in m["parts"]:
            if p["kind"] == "reasoning":
                parts.append(_reasoning_item(p))
            else:
                parts.append(p)
        items.append({"seq": m["seq"], "role": m["role"], "parts": parts, "carriers": m.get("carriers", []),
                      "route": _route_of(m["parts"]),
                      "checkpoint": any(p["kind"] == "compaction" for p in parts),
                      "inherited": info["branch_of_seq"] is not None and m["seq"] <= info["branch_of_seq"],
                      "branches": branches.get(m["seq"], [])})
    info = {**info, "created": when(info["created"]), "updated": when(info["updated"])}
    return {"session": info, "items": items}


# ----------------------------------------------------------------------------- request matrix


def session_records(store: SessionStore, info: Any, read: Callable[[str], Iterable[Mapping[str, Any]]],
                    max_depth: int = 16) -> list[Mapping[str, Any]]:
    """The log records of a session, preceded — for a branch — by its ancestors' records made
    before the branch was taken, cut to the turns the branch inherited: those requests are
    what carried the inherited turns' reasoning."""
    levels: list[tuple[str, float, int]] = []
    cap: int | None = None
    cur = info
    while cur.parent_id and cur.branch_of_seq is not None and len(levels) < max_depth:
        cap = cur.branch_of_seq if cap is None else min(cap, cur.branch_of_seq)
        levels.append((cur.parent_id, cur.created, cap))
        try:
            cur = store.get_session(cur.parent_id)
        except StoreError:  # the parent was deleted: the branch keeps its copy, the log its lines
            break
    out: list[Mapping[str, Any]] = []
    for parent, before, upto in reversed(levels):
        for rec in read(parent):
            if float(rec.get("ts") or 0) > before:
                continue
            if "turns" in rec:
                rec = {**rec, "turns": [[a, min(b, upto), k] for a, b, k in rec["turns"] if a <= upto]}
            out.append(rec)
    out.extend(read(info.id))
    return out


@dataclass(frozen=True, slots=True)
class Cell:
    action: str
    """``sent`` / ``padded`` / ``text`` / ``dropped`` (see ``ACTION_LABEL``), or ``cut``."""
    reason: str


Run = tuple[int, int, int]
"""(first stored index, last stored index, kind number): every assistant turn in between got
the decisions of that kind (see ``logs.plan_summary``)."""


@dataclass
class Column:
    """One request (or several consecutive ones drawn as one): route, status, and per assistant
    turn and carrier what was done."""

    n: int
    """The request's number in the session's log; the last one when several are drawn as one."""
    session: str
    """The session whose request this was (an ancestor's, on a branch's page)."""
    event: str
    ts: str
    route: str
    model: str
    host: str
    step: Any
    status: int
    ms: Any
    first: int = 0
    """The first request drawn in this column (== ``n`` unless consecutive ones were merged)."""
    ms_min: float = 0.0
    ms_max: float = 0.0
    carriers: list[str] = field(default_factory=list)
    runs: list[Run] = field(default_factory=list)
    kinds: list[dict[str, Cell]] = field(default_factory=list)
    window: int = 0
    switch: bool = False
    retry: bool = False
    learned: list[str] = field(default_factory=list)
    error: str = ""
    notes: list[str] = field(default_factory=list)
    legacy: str = ""
    """For records written before per-turn decisions were logged: the aggregate summary."""
    cells: dict[int, dict[str, Cell]] = field(default_factory=dict)
    """stored message index → carrier → cell; filled only for the columns that are drawn."""
    sent: set[int] = field(default_factory=set)

    def signature(self, upto: int | None = None) -> list[tuple[int, int, frozenset[tuple[str, Cell]]]]:
        """The runs with their decisions, cut at stored index ``upto``: equal signatures mean
        every turn up to there was treated alike."""
        keys = self.__dict__.get("_keys")
        if keys is None:
            keys = self.__dict__["_keys"] = [frozenset(kind.items()) for kind in self.kinds]
        return [(f, last if upto is None else min(last, upto), keys[k])
                for f, last, k in self.runs if upto is None or f <= upto]

    def top(self) -> int:
        return max((last for _, last, _ in self.runs), default=-1)

    def expand(self, rows: Sequence[int]) -> None:
        """Fill ``cells`` and ``sent`` for the stored assistant turns ``rows`` (sorted)."""
        for first, last, k in self.runs:
            lo, hi = bisect.bisect_left(rows, first), bisect.bisect_right(rows, last)
            for index in {first, last, *rows[lo:hi]}:
                self.sent.add(index)
                self.cells[index] = self.kinds[k]  # shared by the run's turns: read-only


@dataclass
class Matrix:
    rows: list[int]
    columns: list[Column]
    """The drawn columns: the last ``last`` of ``total``."""
    total: int = 0
    requests: int = 0


DROPPED = "dropped"


def _kind_cells(decisions: Sequence[Sequence[Any]], reasons: Sequence[str]) -> dict[str, Cell]:
    """One decision list → carrier → cell."""
    cells: dict[str, Cell] = {}
    for action, fields, reason_no in decisions:
        reason = reasons[reason_no] if 0 <= reason_no < len(reasons) else ""
        label = ACTION_LABEL.get(action, action)
        for carrier in (fields.split(",") if fields and action != "drop" else [DROPPED]):
            cell = cells.get(carrier)
            if cell is None:
                cells[carrier] = Cell(label, reason)
            elif reason not in cell.reason:
                cells[carrier] = Cell(cell.action, f"{cell.reason}; {reason}")
    return cells


def _column(n: int, rec: Mapping[str, Any]) -> Column:
    ms = rec.get("ms")
    col = Column(n, str(rec.get("session") or ""), str(rec.get("event")), when(rec.get("ts")),
                 str(rec.get("route")), str(rec.get("model")), str(rec.get("host")), rec.get("step"),
                 int(rec.get("status") or 200), ms, first=n,
                 window=int(rec.get("window") or 0), notes=list(rec.get("notes") or []),
                 error=str(rec.get("error") or "") if rec.get("event") == "request_failed" else "")
    col.ms_min = col.ms_max = float(ms) if isinstance(ms, int | float) else 0.0
    reasons: Sequence[str] = rec.get("reasons") or []
    col.kinds = [_kind_cells(k, reasons) for k in rec.get("kinds") or []]
    if "turns" not in rec:
        col.legacy = carried_summary(rec) if rec.get("event") == "request" else ""
    for first, last, k in rec.get("turns") or []:
        if 0 <= k < len(col.kinds):
            col.runs.append((int(first), int(last), k))
            col.carriers += [c for c in col.kinds[k] if c not in col.carriers]
    if DROPPED in col.carriers:  # the catch-all column last
        col.carriers.remove(DROPPED)
        col.carriers.append(DROPPED)
    return col


def _same_treatment(a: Column, b: Column) -> bool:
    """``b`` only went on where ``a`` left off: same session and route, both accepted, and every
    turn ``a`` carried got the same decisions in ``b``."""
    return (a.session, a.route, a.model, a.host, a.window) == (b.session, b.route, b.model, b.host, b.window) \
        and a.status < 400 and b.status < 400 and not a.learned and not b.retry and not a.legacy \
        and not b.legacy and set(a.carriers) <= set(b.carriers) and b.signature(a.top()) == a.signature()


def request_matrix(records: Iterable[Mapping[str, Any]], assistant_rows: Iterable[int], *,
                   last: int = 0) -> Matrix:
    """Columns in log order, the last ``last`` drawn (0: all). A column is marked ``switch``
    when its route or model differs from the one before, ``retry`` when it follows a learned
    rejection in the same step; a failed request carries what was learned from it.
    Consecutive requests that treated every turn they share alike are one column
    (``first``..``n``). Marks are worked out over every request before any is left undrawn."""
    columns: list[Column] = []
    learned_step: Any = None
    count = 0
    for rec in records:
        event = rec.get("event")
        if event == "learned":
            dropped = ", ".join(rec.get("dropped") or [])
            what = f"stop sending {dropped}" if dropped else f"suppress {rec.get('suppressed', 0)} blob(s)"
            if columns:
                columns[-1].learned.append(f"learned after HTTP {rec.get('status')}: {what}")
            learned_step = columns[-1].step if columns else None
            continue
        if event not in ("request", "request_failed"):
            continue
        count += 1
        col = _column(count, rec)
        prev = columns[-1] if columns else None
        col.switch = prev is not None and (prev.route, prev.model, prev.host) != (col.route, col.model, col.host)
        col.retry = learned_step is not None and learned_step == col.step and prev is not None \
            and prev.session == col.session
        learned_step = None
        if prev is not None and _same_treatment(prev, col):
            col.first, col.switch = prev.first, prev.switch
            col.ms_min, col.ms_max = min(prev.ms_min, col.ms_min), max(prev.ms_max, col.ms_max)
            columns[-1] = col
        else:
            columns.append(col)
    drawn = columns[-last:] if last else columns
    rows = sorted(set(assistant_rows))
    for col in drawn:
        col.expand(rows)
    all_rows = set(rows).union(*(c.sent for c in drawn))
    for col in drawn:  # turns a checkpoint had cut from this request
        for index in all_rows:
            if index < col.window and index not in col.sent:
                col.cells[index] = {"cut": Cell("cut", "before the compaction checkpoint: not sent")}
        if col.window and any("cut" in c for c in col.cells.values()) and "cut" not in col.carriers:
            col.carriers.insert(0, "cut")
    return Matrix(sorted(all_rows), drawn, len(columns), count)


# ----------------------------------------------------------------------------- live


def _proxy_summary(rec: Mapping[str, Any]) -> str:
    """A ``proxy`` record: per assistant message what the proxy restored, padded or stripped."""
    counts: dict[str, dict[str, int]] = {}
    for m in rec.get("messages") or []:
        if not isinstance(m, Mapping):
            continue
        for what in ("restored", "padded", "stripped"):
            for name in m.get(what) or []:
                counts.setdefault(what, {}).setdefault(str(name), 0)
                counts[what][str(name)] += 1
    bits = [f"{what} " + ", ".join(f"{name}×{n}" for name, n in names.items()) for what, names in counts.items()]
    if rec.get("assistant_messages") is not None:
        bits.append(f"{rec.get('recognised', 0)}/{rec['assistant_messages']} turns recognised")
    if rec.get("retried"):
        bits.append("retried")
    if rec.get("memory"):
        bits.append(f"memory {rec['memory']}")
    return "; ".join(bits) or "passed through"


def live_record(rec: Mapping[str, Any]) -> dict[str, Any]:
    """What the live tail shows of one log record: where, status, latency, what was carried
    (for the proxy: what it restored / padded / stripped)."""
    event = str(rec.get("event"))
    if event == "request":
        what = carried_summary(rec)
    elif event == "proxy":
        what = _proxy_summary(rec)
    elif event == "learned":
        what = "learned: stop sending " + (", ".join(rec.get("dropped") or []) or f"{rec.get('suppressed', 0)} blob(s)")
    elif event == "request_failed":
        what = str(rec.get("error") or "")[:200]
    else:
        what = str(rec.get("error") or "")[:200]
    status = rec.get("status") or (200 if event == "request" else "")
    who = rec.get("session") or (f"tenant {rec['tenant']}" if rec.get("tenant") else "")
    return {"ts": when(rec.get("ts"))[11:], "event": event, "session": rec.get("session") or "", "who": who,
            "route": f"{rec.get('route') or ''}", "model": f"{rec.get('model') or ''}",
            "status": status, "ms": rec.get("ms", ""), "step": rec.get("step", ""), "what": what}
