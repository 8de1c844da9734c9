"""The turn lane: a keep-alive connection that posts turns is served by one thread, end to end.

At many busy sessions a gateway process runs one thread of Python at a time (the GIL), so
what bounds its turns per second is its CPU per turn, and every hand-over between threads
costs some: on the event loop's path a request is read and parsed on the loop, handed to a
turn thread, and its answer handed back to the loop to be written — two wake-ups of another
thread per turn, each a GIL hand-over and a context switch. The lane takes both away for the
request a gateway serves most: a client posting turn after turn on one connection.

Once a plain JSON turn has been answered on a keep-alive connection through the loop (the
handler marks it, ``LANE_MARK``), the connection is **adopted**: the loop stops reading it
and a turn thread gets a duplicate of its socket. That thread waits up to ``linger_s`` for
the next request, reads and parses it itself, and when it is another plain turn — ``POST
/v1/sessions/{sid}/messages``, or ``POST /v1/chat/completions`` on a session named by
``X-Hermes-Session`` (the OpenAI facade, answered through ``compat.Collector``); HTTP/1.1,
a ``Content-Length`` JSON body within the limit, no stream, no ``Idempotency-Key``, a Host
the gateway answers to, no foreign Origin, the right token — runs it on that thread and
writes the answer. The lane answers only the turns it
runs; for everything else (another route, a stream, a wrong or missing token, anything
malformed, unusual or slow, a session leased elsewhere, other turns waiting for a thread,
the server shutting down, a client gone quiet) it **hands the connection back** to the loop
with every byte it read, and the loop serves it exactly as if the lane did not exist: the
refusals, limits and back-offs stay implemented once, on the loop's path.

The header deadline runs on in the lane (measured from the end of the last answer, as on
the loop's path); a body that does not arrive within ``body_timeout_s`` is answered 408 and
the connection closed, as ``read_json`` does. An answer is written without waiting: what
the client's socket does not take goes back to the loop with the connection, so a client
that stops reading holds no thread.
"""

from __future__ import annotations

import functools
import os
import re
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import orjson
from starlette.responses import Response
from uvicorn.protocols.http.httptools_impl import STATUS_LINE

from ..events import EventSink
from .compat import HEADER, Collector, completion, last_user_text
from .guard import Guard
from .http import ApiError, answer_error, body_late, json_response, openai_error_response, token_ok
from .locks import LeaseHeld
from .turns import TurnRequest, event_mapper, turn_request

if TYPE_CHECKING:
    from .app import GatewayState

__all__ = ["Handback", "Lane", "Letgo"]


MAX_HEAD = 16 * 1024
"""A request head longer than this goes back to the loop (whose parser has its own limits)."""

_SID = rb"[A-Za-z0-9_.~-]+"
_TARGET = re.compile(rb"/v1/sessions/(" + _SID + rb")/messages")
_COMPLETIONS = b"/v1/chat/completions"
_SESSION_ID = re.compile(_SID)
_NAME = re.compile(rb"[!#$%&'*+.^_`|~0-9A-Za-z-]+")
_VALUE = re.compile(rb"[\t\x20-\x7e]*")
"""Header names are tokens and values printable ASCII; both checks are linear in the line
(nested quantifiers here once took half a second over a 16 KB line of spaces)."""
_SINGLE = (b"host", b"content-length", b"content-type", b"authorization", b"origin", b"x-hermes-session")
"""Headers the lane acts on: a request carrying one of them twice goes to the loop."""
_REFUSED = (b"transfer-encoding", b"expect", b"upgrade", b"idempotency-key")

Handback = Callable[["Letgo"], None]
"""Called (thread-safe) when the lane lets go of a connection."""


@dataclass(frozen=True, slots=True)
class Letgo:
    """How the lane gives a connection back to the event loop."""

    unread: bytes = b""
    """Bytes the lane read and did not answer: the loop parses them as if just arrived."""
    unsent: bytes = b""
    """The end of an answer the client's socket had no room for: the loop writes it (the lane
    never waits on a client that does not read)."""
    mode: str = "serve"
    """``"serve"`` the connection on, ``"close"`` it once written, ``"abort"`` it."""
    left_s: float = 0.0
    """Seconds left of the header deadline for the next request."""


@dataclass(slots=True)
class Adopted:
    """A connection the lane holds: its socket (a duplicate of the loop's descriptor, so the
    loop closing its own never hands this thread a reused one) and how to give it back."""

    sock: socket.socket
    handback: Handback
    headers: Callable[[], list[tuple[bytes, bytes]]]
    """The server's default response headers now (``date`` changes every second)."""
    shutting_down: Callable[[], bool]


class Lane:
    """Serves adopted connections on the gateway's turn threads (``GatewayState.pool``)."""

    def __init__(self, state: GatewayState, guard: Guard, *, linger_s: float = 0.05) -> None:
        self.state = state
        self.guard = guard
        self.linger_s = linger_s
        self.token = state.options.token
        self.max_body = state.options.max_body
        self.header_timeout_s = state.options.header_timeout_s
        self.body_timeout_s = state.options.body_timeout_s
        self.running = 0
        """Turns the lane runs now (``GatewayState.drain`` waits for them too)."""
        self.served = 0
        """Turns the lane has answered (``/healthz`` shows it; the tests read it)."""
        self._lock = threading.Lock()

    def can_adopt(self) -> bool:
        """A thread is free for it: the lane never makes a turn wait for a thread."""
        return self.state.pool.spare()

    def adopt(self, fd: int, handback: Handback, headers: Callable[[], list[tuple[bytes, bytes]]],
              shutting_down: Callable[[], bool]) -> None:
        """Called on the event loop, which has stopped reading ``fd``."""
        self.state.locks.renewing()  # a lane turn longer than a third of the TTL is renewed too
        conn = Adopted(socket.socket(fileno=os.dup(fd)), handback, headers, shutting_down)
        self.state.pool.submit(lambda: self._hold(conn))

    def _hold(self, conn: Adopted) -> None:
        """Serve turns until something is not a plain turn; never raises (nobody awaits it)."""
        letgo = Letgo(mode="abort")
        try:
            letgo = self._serve(conn)
        except Exception as e:  # a bug here must not strand the connection: the loop aborts it
            from ..logs import log_event

            log_event("gateway_lane_error", error=f"{type(e).__name__}: {e}")
        finally:
            conn.sock.close()  # the duplicate only: the connection is the loop's again
            conn.handback(letgo)

    def _serve(self, conn: Adopted) -> Letgo:
        sock = conn.sock
        buf = b""
        while True:
            deadline = time.monotonic() + self.header_timeout_s
            if not buf:  # the client's next request: wait a little for it, no longer
                try:
                    sock.settimeout(self.linger_s)
                    buf = sock.recv(65536)
                except TimeoutError:
                    return Letgo(left_s=deadline - time.monotonic())
                except OSError:
                    return Letgo()  # no time left: the loop finds the connection gone
                if not buf:
                    return Letgo()
            buf, end = _read_until(sock, buf, lambda b: b.find(b"\r\n\r\n"), MAX_HEAD, deadline)
            ask = self._turn_of(buf[:end]) if end >= 0 else None
            if ask is None or conn.shutting_down():
                return Letgo(buf, left_s=deadline - time.monotonic())
            chat, sid, length = ask
            stop = end + 4 + length
            buf, got = _read_until(sock, buf, functools.partial(_whole, stop), stop,
                                   time.monotonic() + self.body_timeout_s)
            if got < 0:
                if _gone(sock):
                    return Letgo(buf)
                path = _COMPLETIONS.decode() if chat else f"/v1/sessions/{sid}/messages"
                late = answer_error(body_late(self.body_timeout_s), path, openai=chat)  # 408, as read_json answers
                unsent = self._answer(conn, late)
                return Letgo(unsent=unsent or b"", mode="close" if unsent is not None else "abort")
            answer = (self._chat if chat else self._turn)(sid, buf[end + 4:stop])
            if answer is None:  # not a turn the lane runs, or the session is leased elsewhere
                return Letgo(buf, left_s=deadline - time.monotonic())
            close = conn.shutting_down()
            unsent = self._answer(conn, answer, close=close)
            if unsent is None:
                return Letgo(mode="abort")
            buf = buf[stop:]
            if close:
                return Letgo(unsent=unsent, mode="close")
            if unsent or self.state.pool.backlogged():  # a slow reader, or turns waiting for a thread
                return Letgo(buf, unsent, left_s=self.header_timeout_s)

    def _turn_of(self, head: bytes) -> tuple[bool, str, int] | None:
        """(an OpenAI facade request?, session id, body length) of a plain turn this lane may
        run, else ``None``."""
        lines = head.split(b"\r\n")
        parts = lines[0].split(b" ")
        if len(parts) != 3 or parts[0] != b"POST" or parts[2] != b"HTTP/1.1":
            return None
        chat = parts[1] == _COMPLETIONS
        target = _TARGET.fullmatch(parts[1])
        if not chat and target is None:
            return None
        headers: list[tuple[bytes, bytes]] = []
        seen: dict[bytes, bytes] = {}
        for line in lines[1:]:
            name, colon, value = line.partition(b":")
            if not colon or _NAME.fullmatch(name) is None or _VALUE.fullmatch(value) is None:
                return None
            name, value = name.lower(), value.strip(b" \t")
            if name in _REFUSED or (name in _SINGLE and name in seen):
                return None
            if name == b"connection" and value.lower() != b"keep-alive":
                return None
            headers.append((name, value))
            seen[name] = value
        length = seen.get(b"content-length", b"")
        if not length.isdigit() or int(length) > self.max_body:
            return None
        if seen.get(b"content-type", b"").split(b";", 1)[0].strip().lower() != b"application/json":
            return None
        if self.guard.check({"headers": headers, "scheme": "http"}) is not None:
            return None
        if self.token and not token_ok(seen.get(b"authorization", b"").decode("latin-1"), self.token):
            return None  # the loop answers it, after the address's back-off
        sid = target.group(1) if target else seen.get(HEADER.encode(), b"")
        if not _SESSION_ID.fullmatch(sid):  # the facade's first use creates a session: the loop does
            return None
        return chat, sid.decode("ascii"), int(length)

    def _turn(self, sid: str, raw: bytes) -> Response | None:
        """A turn's answer, as the loop's handler would give it; ``None`` when the lane does
        not run it and the loop will: a stream, an invalid body, a session leased elsewhere."""
        body = _json_object(raw)
        if body is None:
            return None
        try:
            req, stream = turn_request(sid, body, self.state.options.lock_wait_s)
        except ApiError:
            return None
        if stream:
            return None
        try:
            result = self._run(req, None)
        except LeaseHeld:
            return None
        except Exception as e:
            return answer_error(e, f"/v1/sessions/{sid}/messages")
        return json_response(result)

    def _chat(self, sid: str, raw: bytes) -> Response | None:
        """The OpenAI facade's answer to a completion on a named session (``compat``), as its
        handler would give it; ``None`` for what the loop does (a stream, a first use, ...)."""
        body = _json_object(raw)
        if body is None or body.get("stream") is True:
            return None
        try:
            text = last_user_text(body.get("messages"))
        except ApiError:
            return None
        model = body["model"] if isinstance(body.get("model"), str) else ""
        c = Collector(completion(model, sid))

        def sink(event: str, data: dict[str, Any]) -> None:
            c.take(event, data)

        try:
            c.take("done", self._run(TurnRequest(sid, text), event_mapper(sink)))
        except LeaseHeld:
            return None
        except Exception as e:
            c.take("error", {"exception": e})
        if isinstance(c.outcome, ApiError):
            return openai_error_response(c.outcome)
        return json_response(c.done.as_json(), headers={HEADER: sid})

    def _run(self, req: TurnRequest, on_event: EventSink | None) -> dict[str, Any]:
        """``run_turn`` under the session's lease, unless a turn of this process waits for the
        session on the loop's path: it goes first (``LeaseHeld``, as when another process
        holds the lease)."""
        state = self.state
        if state.locks.queued(req.session_id):
            raise LeaseHeld
        with self._lock:
            self.running += 1
        try:
            return state.locks.attempt(req.session_id, lambda take: state.run_turn(req, on_event, take))
        finally:
            with self._lock:
                self.running -= 1

    def _answer(self, conn: Adopted, response: Response, *, close: bool = False) -> bytes | None:
        """Write the answer as the loop would have, without waiting for the client to read:
        what did not fit in the socket's buffer (usually nothing), or ``None`` if the client
        is gone."""
        head = [STATUS_LINE[response.status_code]]
        for name, value in (*conn.headers(), *response.raw_headers):
            head += (name, b": ", value, b"\r\n")
        if close and not any(name == b"connection" for name, _ in response.raw_headers):
            head.append(b"connection: close\r\n")
        head.append(b"\r\n")
        data = b"".join(head) + response.body
        with self._lock:  # counted before the client can read it (and ask /healthz)
            self.served += 1
        view, sent = memoryview(data), 0
        try:
            conn.sock.settimeout(0)
            while sent < len(data):
                sent += conn.sock.send(view[sent:])
        except BlockingIOError:
            pass
        except OSError:
            return None
        return data[sent:]


def _read_until(sock: socket.socket, buf: bytes, find: Callable[[bytes], int], most: int,
                deadline: float) -> tuple[bytes, int]:
    """Read until ``find(buf) >= 0`` and return every byte read with it; ``-1`` when it did
    not come: more than ``most`` bytes, past ``deadline``, or the connection closed or failed."""
    while (at := find(buf)) < 0:
        left = deadline - time.monotonic()
        if left <= 0 or len(buf) > most:
            return buf, -1
        try:
            sock.settimeout(left)
            more = sock.recv(65536)
        except OSError:  # TimeoutError included
            return buf, -1
        if not more:
            return buf, -1
        buf += more
    return buf, at


def _json_object(raw: bytes) -> dict[str, Any] | None:
    """A body that is a JSON object, else ``None`` (the loop answers the others)."""
    try:
        body = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return None
    return body if isinstance(body, dict) else None


def _whole(stop: int, buf: bytes) -> int:
    """``stop`` once ``buf`` holds that many bytes (a request's head and body), else -1."""
    return stop if len(buf) >= stop else -1


def _gone(sock: socket.socket) -> bool:
    """The peer closed or reset the connection (a late body is answered 408; a gone client not)."""
    try:
        sock.settimeout(0)
        return sock.recv(1, socket.MSG_PEEK) == b""
    except BlockingIOError:
        return False
    except OSError:
        return True
