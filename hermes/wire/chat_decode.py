"""OpenAI Chat Completions wire, response side: a whole response or one SSE chunk as deltas.

Split from ``openai_chat`` (the request side) so each module has one job; ``openai_chat``
re-exports the names its callers use (``decoder``, ``from_wire``, ``decode_event``,
``ChatDecoder``, ``split_think``). Pure, no I/O.

Both the whole and the streamed parse run through one ``ChatDecoder`` so the streamed and
non-streamed parse of the same response fold into the same stored turn (design invariant 10),
including ``<think>`` tags at the start of ``content`` on routes that emit them (split
identically however the stream is cut).

Decoding reads every reasoning shape seen on this wire: ``reasoning_content`` (wins) or
``reasoning``; ``reasoning_details`` entries verbatim; Copilot ``reasoning_text`` /
``reasoning_opaque``; thought signatures (message and per call) at the row's
``text_signature`` / ``call_signature`` paths (Gemini-compat: ``extra_content.google``);
Mistral ``content`` lists with ``thinking`` chunks; ``<think>`` tags.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import orjson

from ..core.errors import StreamError
from ..core.stream import (
    Delta,
    DetailsDelta,
    FinishDelta,
    NativeDelta,
    ReasoningDelta,
    TextDelta,
    ToolCallDelta,
    UsageDelta,
)
from ..routing.resolve import Resolved
from ..routing.routes import ROUTES

__all__ = ["ChatDecoder", "decode_event", "decoder", "from_wire", "split_think"]

_RKEY = "reasoning"
_TKEY = "text"
_OPEN, _CLOSE = "<think>", "</think>"


def split_think(content: str) -> tuple[str, str]:
    """(reasoning, text) of a content string that may open with ``<think>…</think>``.

    The rule the streaming splitter reproduces: leading whitespace before ``<think>`` and after
    ``</think>`` is dropped; an unclosed tag makes everything after it reasoning; content that
    does not open with the tag is returned untouched as text.
    """
    s = content.lstrip()
    if not s.startswith(_OPEN):
        return "", content
    rest = s[len(_OPEN):]
    end = rest.find(_CLOSE)
    if end < 0:
        return rest, ""
    return rest[:end], rest[end + len(_CLOSE):].lstrip()


def _partial_suffix(s: str, tag: str) -> int:
    """Length of the longest suffix of ``s`` that is a proper prefix of ``tag``."""
    for n in range(min(len(tag) - 1, len(s)), 0, -1):
        if s.endswith(tag[:n]):
            return n
    return 0


def _sig_paths(path: str | None, table: Sequence[str]) -> tuple[tuple[str, ...], ...]:
    """A row's dotted signature path as keys; ``None`` (no row) = every path the built-in
    table names, so a route-less decoder still reads what any route sends."""
    return tuple(tuple(p.split(".")) for p in dict.fromkeys(table if path is None else (path,)) if p)


def _sig_at(obj: Any, paths: tuple[tuple[str, ...], ...]) -> str | None:
    """The first non-empty string at one of ``paths`` (untrusted input: anything else is no
    signature). ``attempt.value_at`` reads dotted paths too; this one walks pre-split keys with
    exact ``dict`` checks (parsed JSON) because it runs on every streamed tool-call chunk."""
    for path in paths:
        cur = obj
        for name in path:
            if type(cur) is not dict:
                cur = None
                break
            cur = cur.get(name)
        if type(cur) is str and cur:
            return cur
    return None


_TABLE_CALL = tuple(r.call_signature for r in ROUTES)
_TABLE_TEXT = tuple(r.text_signature for r in ROUTES)


class ChatDecoder:
    """Decode one response (whole or streamed) into deltas; holds the little state a stream needs.

    State: whether the reasoning slot was reserved (so the stored turn orders reasoning → text →
    tool calls whatever order the chunks come in) and the ``<think>`` splitter's position.
    Thought signatures are read where the row's ``call_signature`` / ``text_signature`` paths
    say — the paths the renderer writes them to (``None``: any path the built-in table names).
    """

    __slots__ = ("_buf", "_call_at", "_last_call", "_mode", "_started", "_text_at", "_text_heads", "think_tags")

    def __init__(self, *, think_tags: bool = False, call_signature: str | None = None,
                 text_signature: str | None = None) -> None:
        self.think_tags = think_tags
        self._call_at = _sig_paths(call_signature, _TABLE_CALL)
        self._text_at = _sig_paths(text_signature, _TABLE_TEXT)
        self._text_heads = frozenset(p[0] for p in self._text_at)
        self._started = False
        self._mode = 0 if think_tags else 3
        """0 before content decided, 1 inside <think>, 2 after </think> (skipping blanks), 3 text."""
        self._buf = ""
        self._last_call = ""

    # --- whole response ---------------------------------------------------------------
    def from_wire(self, payload: Any) -> list[Delta]:
        if not isinstance(payload, Mapping):
            raise StreamError(f"response is not a JSON object: {str(payload)[:120]!r}")
        _raise_error(payload)
        choices = payload.get("choices")
        if not isinstance(choices, list) or not choices or not isinstance(choices[0], Mapping):
            raise StreamError(f"response has no choices: {orjson.dumps(payload)[:160].decode('utf-8', 'replace')!r}")
        choice = choices[0]
        msg = choice.get("message")
        if not isinstance(msg, Mapping):
            raise StreamError("response choice has no message object")
        out: list[Delta] = []
        try:
            self._message(msg, out, whole=True)
        except (AttributeError, TypeError, KeyError, IndexError, ValueError) as e:
            raise StreamError(f"malformed response message ({_what(e)})") from None
        usage = payload.get("usage")
        if isinstance(usage, Mapping):
            out.append(UsageDelta(usage))
        out.append(FinishDelta(str(choice.get("finish_reason") or "stop")))
        return out

    # --- one SSE event ----------------------------------------------------------------
    def decode_event(self, event: str, data: str) -> list[Delta]:
        out: list[Delta] = []
        self._event(data, out)
        return out

    def decode_events(self, events: Sequence[tuple[str, str]]) -> list[Delta]:
        """The events of one network read, each decoded in order, onto one list."""
        out: list[Delta] = []
        one = self._event
        for _, data in events:
            one(data, out)
        return out

    def _event(self, data: str, out: list[Delta]) -> None:
        if data == "[DONE]":
            return
        try:
            chunk = orjson.loads(data)
        except orjson.JSONDecodeError:
            raise StreamError(f"malformed stream chunk (not JSON): {data[:120]!r}") from None
        if type(chunk) is not dict:
            raise StreamError(f"malformed stream chunk (not an object): {data[:120]!r}")
        if chunk.get("error") is not None:
            _raise_error(chunk)
        try:  # free when nothing is wrong; a member of the wrong type is a malformed chunk
            choices = chunk.get("choices")
            if choices:
                choice = choices[0]
                delta = choice.get("delta")
                if delta:
                    self._message(delta, out, False)
                reason = choice.get("finish_reason")
                if reason:
                    self._flush(out)
                    out.append(FinishDelta(str(reason)))
            usage = chunk.get("usage")
            if usage:
                out.append(UsageDelta(dict(usage)))
        except (AttributeError, TypeError, KeyError, IndexError, ValueError) as e:
            raise StreamError(f"malformed stream chunk ({_what(e)}): {data[:120]!r}") from None

    # --- shared body --------------------------------------------------------------------
    def _message(self, m: Mapping[str, Any], out: list[Delta], whole: bool) -> None:
        if not self._started:
            self._started = True
            out.append(ReasoningDelta(_RKEY))  # reserve the reasoning slot: first part of the turn
        # one pass over the (usually one or two) keys a delta has, instead of probing for all
        rc = r = ctext = details = opaque = content = refusal = calls = None
        ext = False  # the message may hold a text signature (a key its path starts with)
        heads = self._text_heads
        for k, v in m.items():
            if not v:
                continue
            if k == "content":
                content = v
            elif k == "reasoning_content":
                rc = v
            elif k == "reasoning":
                r = v
            elif k == "reasoning_details":
                details = v
            elif k == "tool_calls":
                calls = v
            elif k == "reasoning_text":
                ctext = v
            elif k == "reasoning_opaque":
                opaque = v
            elif k in heads:
                ext = True
            elif k == "refusal":
                refusal = v
        rtext = rc or r
        if rtext:
            if type(rtext) is str:
                out.append(ReasoningDelta(_RKEY, rtext))
        elif type(ctext) is str:
            out.append(ReasoningDelta(_RKEY, ctext))
        if details:
            if type(details) is not list:
                raise StreamError("reasoning_details is not a list")
            out.append(DetailsDelta(details, _RKEY, whole))
        if ctext or opaque or ext:
            msg_sig = _sig_at(m, self._text_at) if ext else None
            if type(ctext) is str or type(opaque) is str or msg_sig:
                out.append(NativeDelta(
                    _RKEY,
                    thought_signature=msg_sig,
                    reasoning_opaque=opaque if type(opaque) is str else None,
                    reasoning_text=ctext if type(ctext) is str else "",
                ))
        if content:
            if type(content) is str:
                if self._mode == 3:
                    out.append(TextDelta(_TKEY, content))
                else:
                    self._think(content, out)
            elif isinstance(content, list):
                _content_list(content, out)
        if type(refusal) is str:
            out.append(TextDelta(_TKEY, refusal))
        if calls:
            self._calls(calls, out, whole)
        if whole:
            self._flush(out)

    def _calls(self, calls: Any, out: list[Delta], whole: bool) -> None:
        if not isinstance(calls, list):
            raise StreamError("tool_calls is not a list")
        for pos, tc in enumerate(calls):
            if not isinstance(tc, Mapping):
                raise StreamError("a tool_calls entry is not an object")
            idx = tc.get("index")
            if whole:
                key = str(pos)
            elif idx is not None:
                key = str(idx)
            else:  # no index (some compat servers): a new id opens a call, fragments follow it
                key = tc.get("id") or self._last_call or str(pos)
            self._last_call = key
            fn = tc.get("function") or {}
            args = fn.get("arguments")
            if isinstance(args, Mapping):  # a few servers send parsed arguments
                args = orjson.dumps(args).decode()
            out.append(ToolCallDelta(key, tc.get("id") or None, fn.get("name") or None, args or ""))
            sig = _sig_at(tc, self._call_at)
            if sig:
                out.append(NativeDelta(_RKEY, tool_signature=(key, sig)))

    # --- <think> splitting ------------------------------------------------------------
    def _think(self, piece: str, out: list[Delta]) -> None:
        buf = self._buf + piece
        self._buf = ""
        while buf:
            if self._mode == 0:
                s = buf.lstrip()
                if not s or _OPEN.startswith(s):
                    self._buf = buf
                    return
                if s.startswith(_OPEN):
                    self._mode, buf = 1, s[len(_OPEN):]
                else:
                    self._mode = 3
            elif self._mode == 1:
                end = buf.find(_CLOSE)
                if end >= 0:
                    if end:
                        out.append(ReasoningDelta(_RKEY, buf[:end]))
                    self._mode, buf = 2, buf[end + len(_CLOSE):]
                    continue
                keep = _partial_suffix(buf, _CLOSE)
                if len(buf) > keep:
                    out.append(ReasoningDelta(_RKEY, buf[: len(buf) - keep]))
                self._buf = buf[len(buf) - keep:]
                return
            elif self._mode == 2:
                buf = buf.lstrip()
                if buf:
                    self._mode = 3
            else:
                out.append(TextDelta(_TKEY, buf))
                return

    def _flush(self, out: list[Delta]) -> None:
        """End of content: whatever the splitter held back is final."""
        buf, self._buf = self._buf, ""
        if buf:
            if self._mode == 0:
                out.append(TextDelta(_TKEY, buf))
            elif self._mode == 1:
                out.append(ReasoningDelta(_RKEY, buf))
        if self._mode != 3 and self.think_tags:
            self._mode = 3


def _content_list(items: list[Any], out: list[Delta]) -> None:
    """Mistral-style content: ``{"type": "thinking", "thinking": [...]}`` and ``text`` chunks."""
    for item in items:
        if isinstance(item, str):
            out.append(TextDelta(_TKEY, item))
            continue
        if not isinstance(item, Mapping):
            continue
        kind = item.get("type")
        if kind == "thinking":
            inner = item.get("thinking")
            if isinstance(inner, str):
                text = inner
            else:
                text = "".join(x.get("text", "") for x in inner or () if isinstance(x, Mapping))
            if text:
                out.append(ReasoningDelta(_RKEY, text))
        elif kind == "text" and item.get("text"):
            out.append(TextDelta(_TKEY, item["text"]))


def _what(e: Exception) -> str:
    """A member of the wrong type, named the way Python noticed it (for the StreamError text)."""
    return f"a member has the wrong type: {type(e).__name__}: {str(e)[:80]}"


def _raise_error(payload: Mapping[str, Any]) -> None:
    err = payload.get("error")
    if err is None:
        return
    msg: Any = err
    if isinstance(err, Mapping):
        msg = err.get("message") or err
        code = err.get("code")
        if code is not None:
            msg = f"{msg} (code {code})"
    raise StreamError(f"provider reported an error mid-response: {str(msg)[:300]}")


def decoder(resolved: Resolved) -> ChatDecoder:
    """A fresh decoder for one response from ``resolved`` (knows whether it uses ``<think>`` and
    where its row puts thought signatures)."""
    route = resolved.route
    return ChatDecoder(think_tags=route.think_tags, call_signature=route.call_signature,
                       text_signature=route.text_signature)


def from_wire(payload: Any, *, think_tags: bool = False) -> list[Delta]:
    """A whole non-streaming response as deltas."""
    return ChatDecoder(think_tags=think_tags).from_wire(payload)


def decode_event(event: str, data: str) -> list[Delta]:
    """One SSE event without cross-chunk state (no ``<think>`` splitting); prefer ``decoder``."""
    return ChatDecoder().decode_event(event, data)
