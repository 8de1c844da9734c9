"""The turn lane reads request heads itself; whatever it accepts, llhttp must read the same way.

The lane (``hermes.gateway.lane``) parses a strict subset of HTTP/1.1 and hands anything else
to the event loop, whose parser is llhttp (``httptools``). Two parsers that disagree on where
a request ends, or on which headers it carries, are how requests get smuggled. So for heads
built from well-formed and hostile pieces alike: if the lane takes a head, llhttp parses the
same request line, the same body length and the same values for every header the lane acts
on, and the request ends where the lane thinks it does. (Heads the lane refuses go to llhttp
anyway.)
"""

from __future__ import annotations

from typing import Any

import httptools
from hypothesis import given, settings
from hypothesis import strategies as st

from hermes.gateway.guard import Guard
from hermes.gateway.lane import Lane

REQUEST_LINES = [
    b"POST /v1/sessions/abc123/messages HTTP/1.1", b"POST /v1/chat/completions HTTP/1.1",
    b"POST /v1/sessions/abc123/messages HTTP/1.0", b"GET /v1/sessions/abc123/messages HTTP/1.1",
    b"POST /v1/sessions/abc123/messages  HTTP/1.1", b"POST /v1/sessions/a%2Fb/messages HTTP/1.1",
    b"POST /v1/sessions/abc123/messages?x=1 HTTP/1.1", b"post /v1/chat/completions HTTP/1.1",
    b"POST /v1/sessions/../messages HTTP/1.1", b"POST http://h/v1/chat/completions HTTP/1.1",
]
HEADERS = [
    b"Host: 127.0.0.1", b"Host: evil.example", b"host:127.0.0.1:8642", b"Content-Type: application/json",
    b"content-type: application/json; charset=utf-8", b"Content-Type: text/plain", b"Content-Length: 2",
    b"Content-Length: 02", b"Content-Length: 3", b"Content-Length:  2  ", b"Content-Length: 2, 2",
    b"Content-Length: -2", b"Content-Length: +2", b"Content-Length : 2", b" Content-Length: 2",
    b"Content-Length:\t2", b"Transfer-Encoding: chunked", b"Transfer-Encoding : chunked",
    b"Authorization: Bearer tok-0123456789abcdef", b"Authorization: bearer tok-0123456789abcdef",
    b"Authorization: Bearer wrong", b"X-Hermes-Session: abc123", b"X-Hermes-Session: a b",
    b"Connection: keep-alive", b"Connection: close", b"Expect: 100-continue", b"Origin: http://evil.example",
    b"X-Folded: a", b"\tcontinued", b" continued", b"X-Empty:", b"X-Tab:\tv\t", b"X-Bad\x01: v",
    b"X-Bin: \x80\xff", b"X-Nul: a\x00b", b"X-CR: a\rb", b"X-LF: a\nb", b"NoColon", b":empty-name",
    b"Idempotency-Key: k", b"Upgrade: websocket",
]
TOKEN = "tok-0123456789abcdef"


def lane() -> Lane:
    """A lane's head parser, without the gateway around it (it reads nothing else)."""
    out = Lane.__new__(Lane)
    out.max_body, out.token = 1 << 20, TOKEN
    out.guard = Guard(None, hosts=frozenset({"127.0.0.1", "localhost"}), origins=())
    return out


class Seen:
    """What llhttp makes of a request: its URL, its headers (lower-cased names), its body."""

    def __init__(self) -> None:
        self.url, self.headers, self.body, self.complete = b"", [], b"", 0

    def on_url(self, url: bytes) -> None:
        self.url += url

    def on_header(self, name: bytes, value: bytes) -> None:
        self.headers.append((name.lower(), value))

    def on_body(self, body: bytes) -> None:
        self.body += body

    def on_message_complete(self) -> None:
        self.complete += 1


BASE = [b"Content-Type: application/json", b"Content-Length: 2", f"Authorization: Bearer {TOKEN}".encode(),
        b"X-Hermes-Session: abc123"]
"""A head the lane takes; the extras below make it one it may not."""

ACCEPTED: list[bool] = []


@settings(max_examples=1500, deadline=None)
@given(line=st.sampled_from(REQUEST_LINES), headers=st.lists(st.sampled_from(HEADERS), max_size=4)
       .flatmap(lambda extra: st.permutations(BASE + extra)),
       body=st.sampled_from([b"{}", b"{}x", b"{", b""]), pipelined=st.booleans())
def test_what_the_lane_accepts_llhttp_reads_the_same_way(line: bytes, headers: list[bytes], body: bytes,
                                                         pipelined: bool) -> None:
    head = b"\r\n".join([line, *headers])
    ACCEPTED.append(lane()._turn_of(head) is not None)
    got = lane()._turn_of(head)
    if got is None:
        return  # the event loop's parser (llhttp) reads it: one parser, nothing to compare
    chat, sid, length = got
    after = body + (b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n" if pipelined else b"")
    if len(after) < length:
        return  # the lane waits for the rest of the body, as llhttp would
    seen = Seen()
    parser: Any = httptools.HttpRequestParser(seen)
    try:
        parser.feed_data(head + b"\r\n\r\n" + after)
    except httptools.HttpParserError:  # allowed only past the first request (what follows the body)
        assert seen.complete >= 1, "llhttp refuses a request the lane accepted"
    target = line.split(b" ")[1]
    assert seen.complete >= 1 and seen.url.startswith(target)
    assert (target == b"/v1/chat/completions") == chat
    declared = [v for n, v in seen.headers if n == b"content-length"]
    assert len(declared) == 1 and int(declared[0]) == length
    assert not any(n == b"transfer-encoding" for n, _ in seen.headers)
    assert seen.body == after[:length]  # the body ends where the lane's does (the next request is not in it)
    if chat:
        assert [v.strip() for n, v in seen.headers if n == b"x-hermes-session"] == [sid.encode()]
    auth = [v.strip() for n, v in seen.headers if n == b"authorization"]
    assert len(auth) == 1 and auth[0].split(b" ", 1)[1] == TOKEN.encode()


def test_the_property_saw_heads_of_both_kinds() -> None:
    """The examples above must include heads the lane takes and heads it refuses (else the
    property would hold for want of examples)."""
    if not ACCEPTED:
        test_what_the_lane_accepts_llhttp_reads_the_same_way()
    assert any(ACCEPTED) and not all(ACCEPTED), (sum(ACCEPTED), len(ACCEPTED))
