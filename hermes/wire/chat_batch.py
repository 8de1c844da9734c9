"""The chat stream's hot path: the events one network read completed, decoded together.

A chat stream is tens of thousands of chunks, nearly all one small ``delta``: a piece of
reasoning (OpenRouter sends it twice, as ``reasoning`` and as a one-entry
``reasoning_details`` fragment), of text, or of one tool call's arguments. Turning each into
its own ``Delta`` objects and folding them one by one costs more than parsing its JSON, so
``decode_batch`` joins the pieces of a batch per field and hands the fold one delta per
field instead: what the fold makes of pieces joined first is what it makes of them one by
one (readable text and arguments concatenate; a details fragment merges into the entry of
its (``index``, ``type``): its ``text`` concatenates and every other member it carries is
the same in each joined fragment — see ``_same_entry``).

Every chunk of another shape (the first, a finish, usage, an error, a tool call's id or
name, a signature at the row's paths or a member its message path starts with, Copilot /
Mistral / ``<think>`` fields, anything malformed) closes what was joined so far and goes
through ``ChatDecoder.decode_event`` unchanged, so the order in which parts first appear,
every error and the decoder's state are what decoding the events one at a time gives (``tests/test_stream_fold.py`` checks both ways on the same streams).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import orjson

from ..stream import Delta, DetailsDelta, ReasoningDelta, TextDelta, ToolCallDelta
from .chat_decode import _sig_at

if TYPE_CHECKING:
    from .chat_decode import ChatDecoder

__all__ = ["decode_batch"]

_RKEY = "reasoning"
_TKEY = "text"

# what a joined run is, for ``_close``
_REASONING, _DETAILS, _TEXT, _TOOL = range(4)


def decode_batch(dec: ChatDecoder, events: Sequence[tuple[str, str]]) -> list[Delta]:
    """The deltas of ``events`` (in order) for ``dec``'s response; folding them gives what
    folding ``dec.decode_event`` of each event gives."""
    out: list[Delta] = []
    runs: list[tuple[int, Any, list[str]]] = []
    """Open runs in the order they started: (kind, key or details template, pieces)."""
    reasoning: list[str] | None = None
    text: list[str] | None = None
    details: list[str] = []
    template: dict[str, Any] | None = None
    tools: dict[str, list[str]] = {}
    loads = orjson.loads
    started = dec._started
    heads = dec._text_heads  # a member there may hold the message's signature
    call_at = dec._call_at
    for event, data in events:
        # ---- is this chunk one of the common shapes? (decided before anything is joined)
        fast = started
        if fast:
            try:  # free unless it fails; any failure is for decode_event to judge
                chunk = loads(data)
                choice = chunk["choices"][0]
                delta = choice["delta"]
            except (orjson.JSONDecodeError, KeyError, IndexError, TypeError):
                fast = False
            else:
                fast = (type(delta) is dict and "error" not in chunk and not choice.get("finish_reason")
                        and not chunk.get("usage"))
        if fast:
            rtext = content = entries = calls = None
            for k, v in delta.items():
                if not v:
                    continue
                if k == "content":
                    content = v
                elif k == "reasoning" or k == "reasoning_content":
                    if rtext is not None or type(v) is not str:
                        fast = False  # both (``reasoning_content`` wins) or not text
                        break
                    rtext = v
                elif k == "reasoning_details":
                    entries = v
                elif k == "tool_calls":
                    calls = v
                elif k in _OTHER or k in heads:
                    fast = False
                    break
        if fast and content is not None and (type(content) is not str or dec._mode != 3):
            fast = False
        if fast and entries is not None:
            if type(entries) is list and len(entries) == 1 and type(entry := entries[0]) is dict:
                if template is not None and not _same_entry(entry, template):
                    template = None  # another entry: close what was joined, start again
                    _close(runs, out)
                    reasoning = text = None
                    tools = {}
                if template is None and not _joinable(entry):
                    fast = False
            else:
                fast = False
        call = None
        if fast and calls is not None:
            call = _args_only(calls, call_at)
            if call is None:
                fast = False
        if not fast:
            # ---- anything else: close the runs, then the event exactly as alone
            if runs:
                _close(runs, out)
                reasoning = text = template = None
                tools = {}
            out += dec.decode_event(event, data)
            started = dec._started
            continue
        # ---- join the pieces
        if rtext is not None:
            if reasoning is None:
                reasoning = []
                runs.append((_REASONING, None, reasoning))
            reasoning.append(rtext)
        if entries is not None:
            if template is None:
                template = entry
                details = [entry["text"]]
                runs.append((_DETAILS, template, details))
            else:
                details.append(entry["text"])
        if content is not None:
            if text is None:
                text = []
                runs.append((_TEXT, None, text))
            text.append(content)
        if call is not None:
            key, args = call
            pieces = tools.get(key)
            if pieces is None:
                pieces = tools[key] = []
                runs.append((_TOOL, key, pieces))
            pieces.append(args)
            dec._last_call = key
    if runs:
        _close(runs, out)
    return out


_OTHER = frozenset(("reasoning_text", "reasoning_opaque", "extra_content", "refusal"))
"""Members ``decode_event`` reads that the joined path leaves to it."""


def _joinable(e: dict[str, Any]) -> bool:
    """A ``reasoning_details`` fragment that can start a run: a number ``index``, a text
    ``type`` and ``text``, no ``summary`` (it concatenates too), every other member text or
    null — so that ``_same_entry``'s ``==`` is exact (no ``1 == 1.0 == True``)."""
    if type(e.get("index")) is not int or type(e.get("type")) is not str or type(e.get("text")) is not str:
        return False
    return "summary" not in e and all(v is None or type(v) is str for k, v in e.items() if k != "index")


def _same_entry(e: dict[str, Any], template: dict[str, Any]) -> bool:
    """``e`` continues the run of ``template`` (which passed ``_joinable``): text ``text`` and
    every other member the same. ``==`` is exact here because the template's members are text
    or null, except ``index``, whose type is checked."""
    t = e.get("text")
    if type(t) is not str:
        return False
    e["text"] = template["text"]
    same = e == template and type(e["index"]) is int
    e["text"] = t
    return same


def _args_only(calls: Any, call_at: tuple[tuple[str, ...], ...]) -> tuple[str, str] | None:
    """(key, arguments) when ``calls`` is one fragment of arguments for the call at a number
    ``index`` (no id, name or signature: those go through ``decode_event``)."""
    if type(calls) is not list or len(calls) != 1:
        return None
    tc = calls[0]
    if type(tc) is not dict or tc.get("id") or tc.get("extra_content") is not None or _sig_at(tc, call_at):
        return None
    idx = tc.get("index")
    fn = tc.get("function")
    if type(idx) is not int or type(fn) is not dict or len(fn) != 1:
        return None
    args = fn.get("arguments")
    if type(args) is not str:
        return None
    return str(idx), args


def _close(runs: list[tuple[int, Any, list[str]]], out: list[Delta]) -> None:
    """One delta per open run, in the order the runs started."""
    for kind, key, pieces in runs:
        joined = "".join(pieces)
        if kind == _REASONING:
            out.append(ReasoningDelta(_RKEY, joined))
        elif kind == _DETAILS:
            out.append(DetailsDelta([{**key, "text": joined}], _RKEY, False))
        elif kind == _TEXT:
            out.append(TextDelta(_TKEY, joined))
        else:
            out.append(ToolCallDelta(key, None, None, joined))
    runs.clear()
