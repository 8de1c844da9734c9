"""The call path: (route, history, tools) → one request → one parsed assistant turn.

resolve → plan_replay → wire.to_wire → transport → wire.decoder(resolved) → fold. Every wire
is a ``wire.Wire`` (``to_wire``, ``decoder``, ``endpoint``); the transport is the route's:
HTTP for every row, botocore for ``auth = "aws"`` (SigV4 and the binary event stream).
"""

from __future__ import annotations

import base64
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

import orjson

from ..config.keys import auth_headers, find_key
from ..core.errors import ProviderHTTPError, StreamError
from ..core.messages import Message
from ..core.stream import Accumulator, Delta, Response
from ..rejections.values import ValueRule, apply_values, with_lessons
from ..replay import Learned, ReplayPlan, Settings, plan_replay
from ..routing.resolve import Resolved
from ..transport import Transport
from ..transport.http import HttpTransport
from ..wire import ToolSpec, Wire, get_wire

if TYPE_CHECKING:  # every wire module is checked against the protocol
    from ..wire import anthropic, bedrock, gemini, openai_chat, openai_responses

    _WIRES: tuple[Wire, ...] = (anthropic, bedrock, gemini, openai_chat, openai_responses)

__all__ = ["Exchange", "SSESplitter", "build_body", "complete", "decode_body", "get_wire", "iter_sse", "plain",
           "send", "sse_batches", "sse_events", "with_values"]


@dataclass(frozen=True, slots=True)
class Exchange:
    """One request and its parsed answer; ``body`` is exactly what was sent."""

    plan: ReplayPlan
    body: dict[str, Any]
    response: Response


class SSESplitter:
    """The SSE event splitter, fed text chunks cut anywhere: ``feed(chunk)`` returns the
    (event, data) pairs that chunk completed (one network read's batch, often none),
    ``close()`` the last event of a body that ended without its blank line.

    The hot path of every stream, so the work per event is done in C where it can be. Text
    that starts with ``data: `` is split once on ``"\n\ndata: "``, which cuts it into the data
    of one-line ``data:`` events (nearly all events on chat routes) without slicing any; one
    search for a line end in them all tells that none was anything else. What follows the
    last such event, and text of any other shape — ``event:`` names, multi-line data,
    comments, keep-alives, ``\r\n`` or ``\r`` line ends — takes the general path
    (``_blocks``). The same events come out however the body was cut into chunks; only how
    they are grouped depends on the cuts. The proxy feeds it from its relay loop
    (``proxy.recorder``), Hermes's own client pulls through ``sse_batches``: one mechanism
    for both.
    """

    __slots__ = ("_buf", "_cr")

    def __init__(self) -> None:
        self._buf = ""
        self._cr = False  # a chunk ended in "\r": its "\n" may start the next chunk

    def feed(self, chunk: str) -> list[tuple[str, str]]:
        if self._cr or "\r" in chunk:
            if self._cr:
                chunk = "\r" + chunk
            self._cr = chunk.endswith("\r")
            if self._cr:
                chunk = chunk[:-1]
            chunk = chunk.replace("\r\n", "\n").replace("\r", "\n")
        buf = self._buf
        if "\n\n" not in chunk and not (chunk[:1] == "\n" and buf[-1:] == "\n"):
            self._buf = buf + chunk
            return []
        text = buf + chunk
        if text[:6] == "data: ":
            datas = ("\n\n" + text).split("\n\ndata: ")
            last = datas.pop()  # the last data event, perhaps incomplete, and what follows it
            end = last.find("\n\n")
            if end >= 0:
                datas.append(last[:end])
            if "\n" not in "".join(datas):  # each one line: all simple data events
                batch = [("message", d) for d in datas[1:]]
                if end < 0:
                    self._buf = text[len(text) - len(last) - 6:]  # "data: " + the incomplete event
                else:
                    self._buf = _blocks(last[end + 2:], batch)
                return batch
        batch = []
        self._buf = _blocks(text, batch)
        return batch

    def close(self) -> list[tuple[str, str]]:
        buf, self._buf = self._buf + ("\n" if self._cr else ""), ""
        self._cr = False
        ev = _event(buf) if buf else None
        return [] if ev is None else [ev]


def sse_batches(chunks: Iterable[str]) -> Iterator[list[tuple[str, str]]]:
    """``SSESplitter``'s pull form: one list of (event, data) per chunk, then the last event of
    a body that ended without its blank line."""
    split = SSESplitter()
    feed = split.feed
    for chunk in chunks:
        yield feed(chunk)
    last = split.close()
    if last:
        yield last


def sse_events(chunks: Iterable[str]) -> Iterator[tuple[str, str]]:
    """``sse_batches`` one event at a time."""
    for batch in sse_batches(chunks):
        yield from batch


def _blocks(text: str, batch: list[tuple[str, str]]) -> str:
    """The general path: the events of the complete blocks of ``text`` onto ``batch``; returns
    the incomplete rest."""
    blocks = text.split("\n\n")
    rest = blocks.pop()
    for block in blocks:
        if block[:6] == "data: " and "\n" not in block:
            batch.append(("message", block[6:]))
        elif block:
            ev = _event(block)
            if ev is not None:
                batch.append(ev)
    return rest


def iter_sse(lines: Iterable[str]) -> Iterator[tuple[str, str]]:
    """``sse_events`` for a body already split into lines (without their line ends)."""
    return sse_events(f"{line}\n" for line in lines)


def _event(block: str) -> tuple[str, str] | None:
    """One event's lines (no blank line inside) → (event, data); None when it carries no data."""
    event = ""
    data: list[str] = []
    for line in block.split("\n"):
        if not line or line[0] == ":":
            continue
        name, _, value = line.partition(":")
        if value[:1] == " ":
            value = value[1:]
        if name == "data":
            data.append(value)
        elif name == "event":
            event = value
    if not data:
        return None
    return event or "message", data[0] if len(data) == 1 else "\n".join(data)


def decode_body(content: bytes, route: str) -> Any:
    """The JSON of a whole (non-streamed) response body; ``StreamError`` when it is empty or not JSON."""
    if not content.strip():
        raise StreamError(f"{route}: empty response body (HTTP 200); nothing was stored")
    try:
        return orjson.loads(content)
    except orjson.JSONDecodeError:
        raise StreamError(f"{route}: response is not JSON: {content[:120]!r}") from None


def complete(
    resolved: Resolved,
    history: Sequence[Message],
    *,
    tools: Sequence[ToolSpec] = (),
    settings: Settings = Settings(),
    learned: Learned = Learned(),
    stream: bool = False,
    api_key: str | None = None,
    transport: Transport | None = None,
    on_delta: Callable[[Delta], None] | None = None,
    body_hook: Callable[[dict[str, Any]], dict[str, Any]] | None = None,
    values: Sequence[ValueRule] = (),
) -> Exchange:
    """Send one request built from ``history`` to ``resolved`` and fold the answer; ``values``:
    the route's value lessons (``rejections.values_for``), applied to the body's top-level
    parameters. A conversation builds through its ``builder.Builder`` instead (the same bytes)."""
    resolved = with_values(resolved, values)
    plan = plan_replay(history, resolved, learned, settings)
    wire = get_wire(resolved.route.wire)
    return send(resolved, plan, lambda s: build_body(wire, plan, tools=tools, settings=settings, stream=s),
                lambda: plan, stream=stream, values=values, api_key=api_key, transport=transport,
                on_delta=on_delta, body_hook=body_hook)


def with_values(resolved: Resolved, values: Sequence[ValueRule]) -> Resolved:
    """``resolved`` with its model profile under the route's value lessons."""
    if values and (profile := with_lessons(resolved.profile, values)) is not resolved.profile:
        return replace(resolved, profile=profile)
    return resolved


def send(resolved: Resolved, plan: ReplayPlan, body_for: Callable[[bool], dict[str, Any]],
         whole: Callable[[], ReplayPlan], *, stream: bool, values: Sequence[ValueRule] = (),
         api_key: str | None = None, transport: Transport | None = None,
         on_delta: Callable[[Delta], None] | None = None,
         body_hook: Callable[[dict[str, Any]], dict[str, Any]] | None = None) -> Exchange:
    """Send the request for ``plan`` (``body_for(stream)``: its body) and fold the answer. A
    refusal carries what the body held (``whole()``: the plan of every message sent)."""
    wire = get_wire(resolved.route.wire)
    body = body_for(stream)
    if values:
        body = apply_values(body, values)
    if not stream and _needs_stream(resolved.route.streams_with, body):
        stream = True  # the route refuses these fields on a non-streaming call; the answer folds the same
        body = body_for(True)
        if values:
            body = apply_values(body, values)
    if body_hook is not None:
        body = body_hook(plain(body))
    key = find_key(resolved.route, api_key)
    acc = Accumulator(resolved.key)

    def feed(deltas: Sequence[Delta]) -> None:
        for d in deltas:
            acc.feed(d)
            if on_delta is not None:
                on_delta(d)

    try:
        _send(wire, resolved, body, stream=stream, key=key, transport=transport, feed=feed)
    except ProviderHTTPError as e:
        e.attempt = wire.attempt(whole(), plain(body))  # what was refused, for rejections.classify
        raise
    return Exchange(plan, body, acc.result())


def _needs_stream(fields: Mapping[str, Any], body: Mapping[str, Any]) -> bool:
    return any(name in body and body[name] == value for name, value in fields.items())


def build_body(wire: Wire, plan: ReplayPlan, *, tools: Sequence[ToolSpec] = (), settings: Settings = Settings(),
               stream: bool = False, rendered: Sequence[bytes] | None = None) -> dict[str, Any]:
    """The request body for ``plan``, assembled by the wire; ``rendered``: each planned
    message's render already serialised (the builder's), spliced as ``orjson.Fragment``s
    (``plain`` turns such a body into plain JSON values)."""
    return wire.to_wire(plan, tools=tools, settings=settings, stream=stream, rendered=rendered)


def plain(body: dict[str, Any]) -> dict[str, Any]:
    """``body`` as plain JSON values (its fragments parsed), for code that reads it; bytes
    (botocore's blobs, such as Bedrock's ``redactedContent``) become the base64 text the
    store keeps for them."""
    out: dict[str, Any] = orjson.loads(orjson.dumps(body, default=_blob))
    return out


def _blob(o: object) -> str:
    if isinstance(o, bytes | bytearray):
        return base64.b64encode(bytes(o)).decode()
    raise TypeError(f"{type(o).__name__} is not JSON")


def _send(wire: Wire, resolved: Resolved, body: dict[str, Any], *, stream: bool, key: str | None,
          transport: Transport | None, feed: Callable[[Sequence[Delta]], None]) -> None:
    """One path for every wire: a fresh decoder, then the route's transport.

    ``auth = "aws"`` rows go through botocore (SigV4 signing and the binary event stream);
    every other row through ``transport`` (HTTP + SSE; ``HttpTransport`` unless given). Both feed the same decoder's deltas."""
    dec = wire.decoder(resolved)
    if resolved.route.auth == "aws":
        from ..transport.aws import call

        call(resolved, body, stream=stream, feed=feed, decoder=dec)
        return
    url, headers = wire.endpoint(resolved, stream=stream)
    headers = {"content-type": "application/json", **headers, **auth_headers(resolved.route, key)}
    own = transport is None
    t = transport or HttpTransport()
    route = resolved.route.key
    try:
        raw = orjson.dumps(body)
        if stream:
            with t.stream(url, raw, headers, route=route) as r:
                decode = dec.decode_events
                for batch in sse_batches(r.iter_text()):
                    feed(decode(batch))
        else:
            _, content = t.post_json(url, raw, headers, route=route)
            feed(dec.from_wire(decode_body(content, route)))
    finally:
        if own:
            t.close()
