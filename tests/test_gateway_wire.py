"""What the gateway puts on the socket: a whole response in one segment, a streamed one in order.

uvicorn writes a response's head as soon as the app sends it and the body after; on a socket
with ``TCP_NODELAY`` (the gateway's) each write leaves as its own segment and wakes the client
twice. ``server.HeadHeld`` holds the head back until the body follows. The kernel counts the
segments with data a socket received (``tcpi_data_segs_in``), so the client's own socket says
how many writes carried each response: no mock, no timing.
"""

from __future__ import annotations

import socket
import struct
import sys
import time
from pathlib import Path
from typing import Any

import orjson
import pytest
from _harness import gateway

from hermes.config import Config

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="reads Linux's struct tcp_info")

_DATA_SEGS_IN = 152
"""Offset of ``tcpi_data_segs_in`` in Linux's ``struct tcp_info`` (since 4.6)."""


def data_segments_in(sock: socket.socket) -> int:
    info = sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 256)
    if len(info) < _DATA_SEGS_IN + 4:
        pytest.skip("this kernel's tcp_info has no tcpi_data_segs_in (Linux < 4.6)")
    return int(struct.unpack_from("I", info, _DATA_SEGS_IN)[0])


def exchange(sock: socket.socket, request: bytes) -> tuple[bytes, bytes, int]:
    """Send one request, read its whole Content-Length response: (head, body, data segments)."""
    before = data_segments_in(sock)
    sock.sendall(request)
    buf = b""
    while b"\r\n\r\n" not in buf:
        buf += sock.recv(65536)
    head, body = buf.split(b"\r\n\r\n", 1)
    length = next(int(line.split(b":", 1)[1]) for line in head.split(b"\r\n")[1:]
                  if line.lower().startswith(b"content-length:"))
    while len(body) < length:
        body += sock.recv(65536)
    return head, body, data_segments_in(sock) - before


def post(path: str, body: dict[str, Any]) -> bytes:
    raw = orjson.dumps(body)
    return (f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(raw)}\r\n\r\n").encode() + raw


def test_whole_responses_leave_in_one_segment_and_streams_still_arrive_in_order(
        emulator: Any, hermes_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DEEPSEEK_API_KEY", "sk-deepseek-test-0001")
    with gateway(hermes_home, Config(), allowed_base_urls=(emulator.root,)) as url:
        host, port = url.removeprefix("http://").rsplit(":", 1)
        with socket.create_connection((host, int(port))) as sock:
            head, body, segs = exchange(sock, post("/v1/sessions", {
                "provider": "deepseek", "model": "deepseek-v4-pro", "base_url": emulator.url("deepseek")}))
            assert head.startswith(b"HTTP/1.1 201"), head
            assert segs == 1, f"a session's 201 came in {segs} segments"
            sid = orjson.loads(body)["id"]

            for text in ("one", "two"):  # turns on the same keep-alive connection
                head, body, segs = exchange(sock, post(f"/v1/sessions/{sid}/messages", {"content": text}))
                assert head.startswith(b"HTTP/1.1 200"), head + body
                assert orjson.loads(body)["session_id"] == sid
                assert segs == 1, f"a turn's answer came in {segs} segments"

            head, body, segs = exchange(sock, post(f"/v1/sessions/{sid}/messages", {}))  # an error answer too
            assert head.startswith(b"HTTP/1.1 400") and b"content" in body and segs == 1

            # a streamed turn: the head is not held for the stream's end; every event arrives, in order
            sock.sendall(post(f"/v1/sessions/{sid}/messages", {"content": "three", "stream": True}))
            stream = b""
            while not stream.endswith(b"0\r\n\r\n"):  # chunked: the last chunk ends the response
                chunk = sock.recv(65536)
                assert chunk, "the gateway closed the connection mid-stream"
                stream += chunk
    head, _, rest = stream.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200") and b"text/event-stream" in head
    events = [line.split(b": ", 1)[1] for line in rest.split(b"\n") if line.startswith(b"event: ")]
    assert events[-1] == b"done" and b"text" in events, events


def test_a_client_that_waits_for_100_continue_gets_it_before_it_sends_the_body(hermes_home: Path) -> None:
    """The interim "100 Continue" is the first thing written for its request, so it is held like
    a head; the client sends nothing more until it arrives, so it must leave on its own."""
    body = orjson.dumps({"provider": "deepseek", "model": "deepseek-v4-pro"})
    with gateway(hermes_home, Config()) as url:
        host, port = url.removeprefix("http://").rsplit(":", 1)
        with socket.create_connection((host, int(port)), timeout=5) as sock:
            sock.sendall(b"POST /v1/sessions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                         b"Expect: 100-continue\r\nContent-Length: %d\r\n\r\n" % len(body))
            assert sock.recv(65536) == b"HTTP/1.1 100 Continue\r\n\r\n"
            sock.sendall(body)
            answer = b""
            while b"\r\n\r\n" not in answer:
                answer += sock.recv(65536)
    assert answer.startswith(b"HTTP/1.1 201"), answer


# ----------------------------------------------------------------------------- the turn lane

TOKEN = "lane-test-token-0123456789"


def turn(sid: str, content: str, *, token: str = TOKEN, extra: str = "", **fields: Any) -> bytes:
    raw = orjson.dumps({"content": content, **fields})
    return (f"POST /v1/sessions/{sid}/messages HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {token}\r\n"
            f"Content-Type: application/json\r\n{extra}Content-Length: {len(raw)}\r\n\r\n").encode() + raw


def get(path: str, token: str = TOKEN) -> bytes:
    return f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {token}\r\n\r\n".encode()


def new_session(sock: socket.socket, emulator: Any) -> str:
    raw = orjson.dumps({"provider": "deepseek", "model": "deepseek-v4-pro", "base_url": emulator.url("deepseek")})
    _, body, _ = exchange(sock, (f"POST /v1/sessions HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer {TOKEN}\r\n"
                                 f"Content-Type: application/json\r\nContent-Length: {len(raw)}\r\n\r\n").encode() + raw)
    return str(orjson.loads(body)["id"])


def lane_turns(url: str) -> int:
    host, port = url.removeprefix("http://").rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        _, body, _ = exchange(sock, get("/healthz"))
    return int(orjson.loads(body)["lane_turns"])


def answered(head: bytes, body: bytes, content: str) -> bool:
    return head.startswith(b"HTTP/1.1 200") and f"{content!r}" in orjson.loads(body)["answer"]


def test_a_connection_that_posts_turns_is_served_by_the_lane_and_anything_else_by_the_loop(
        emulator: Any, hermes_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """After a plain turn, the connection's next plain turns run on a turn thread with no event
    loop in between (``gateway.lane``); a request of any other kind on it — a view, a wrong
    token, an idempotent retry, a stream, two requests in one write — is answered by the loop
    as before, and every turn is stored once, in order."""
    from hermes.store import Store

    monkeypatch.setenv("DEEPSEEK_API_KEY", "sk-deepseek-test-0001")
    with gateway(hermes_home, Config(), token=TOKEN, allowed_base_urls=(emulator.root,), lane_linger_s=5.0) as url:
        host, port = url.removeprefix("http://").rsplit(":", 1)
        with socket.create_connection((host, int(port)), timeout=30) as sock:
            sid = new_session(sock, emulator)
            sent: list[str] = []

            def ask(content: str, **kw: Any) -> None:
                head, body, segs = exchange(sock, turn(sid, content, **kw))
                assert answered(head, body, content), head + body
                assert segs == 1, f"a turn's answer came in {segs} segments"
                sent.append(content)

            ask("first")  # on the loop: the connection is adopted after its answer
            lane = lane_turns(url)
            for n in range(3):
                ask(f"lane {n}")
            assert lane_turns(url) == lane + 3
            head, body, _ = exchange(sock, turn("no-such-session", "lost"))  # refused by the turn itself, in the lane
            assert head.startswith(b"HTTP/1.1 404") and orjson.loads(body)["error"]["type"] == "not_found", body
            assert lane_turns(url) == lane + 4
            lane += 1

            head, body, _ = exchange(sock, get(f"/v1/sessions/{sid}"))  # not a turn: back to the loop
            assert head.startswith(b"HTTP/1.1 200") and len(orjson.loads(body)["messages"]) == 4 * len(sent)
            ask("after a view")
            ask("lane again")
            assert lane_turns(url) == lane + 4

            head, body, _ = exchange(sock, turn(sid, "wrong token", token="not-the-token-at-all"))
            assert head.startswith(b"HTTP/1.1 401") and b"www-authenticate" in head.lower(), head
            ask("after a 401")
            ask("idempotent", extra="Idempotency-Key: k-1\r\n")
            head, body, _ = exchange(sock, turn(sid, "idempotent", extra="Idempotency-Key: k-1\r\n"))
            assert answered(head, body, "idempotent")  # the first outcome again, nothing stored twice
            ask("lane once more")

            sock.sendall(turn(sid, "pipelined 1") + turn(sid, "pipelined 2"))  # two requests, one write
            buf = b""
            while buf.count(b"HTTP/1.1 200") < 2 or not buf.rstrip().endswith(b"}"):
                buf += sock.recv(65536)
            assert buf.index(b"'pipelined 1'") < buf.index(b"'pipelined 2'"), buf
            sent += ["pipelined 1", "pipelined 2"]
            ask("after the pipeline")
            served = lane_turns(url) - lane
        with Store(hermes_home / "state.db") as s:
            history = s.load(sid)
    users = [m.text for m in history if m.role == "user"]
    assert users == sent, users
    assert [m.role for m in history] == ["user", "assistant", "tool", "assistant"] * len(sent)
    assert 6 <= served < len(sent) - 1, served


def test_the_lane_keeps_the_loops_deadlines(emulator: Any, hermes_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A connection the lane holds is closed when a request's head trickles past the header
    deadline, answered 408 and closed when its body does, served when it pauses longer than
    the lane waits (the loop takes it back), and closed once idle past the header deadline."""
    import time

    monkeypatch.setenv("DEEPSEEK_API_KEY", "sk-deepseek-test-0001")
    with gateway(hermes_home, Config(), token=TOKEN, allowed_base_urls=(emulator.root,),
                 header_timeout_s=1.0, body_timeout_s=1.0, lane_linger_s=0.2) as url:
        host, port = url.removeprefix("http://").rsplit(":", 1)

        def adopted() -> tuple[socket.socket, str]:
            sock = socket.create_connection((host, int(port)), timeout=10)
            sid = new_session(sock, emulator)
            for content in ("one", "two"):  # the second is the lane's
                assert answered(*exchange(sock, turn(sid, content))[:2], content)
            return sock, sid

        def closed_within(sock: socket.socket, seconds: float) -> bytes:
            started, got = time.monotonic(), b""
            try:
                while chunk := sock.recv(65536):
                    got += chunk
            except ConnectionResetError:
                pass
            assert time.monotonic() - started < seconds, "the connection stayed open"
            return got

        before = lane_turns(url)
        sock, sid = adopted()
        assert lane_turns(url) == before + 1
        whole = turn(sid, "trickled")
        sock.sendall(whole[:20])  # part of the head, then nothing
        assert closed_within(sock, 3.0) == b""
        sock.close()

        sock, sid = adopted()
        whole = turn(sid, "half a body")
        sock.sendall(whole[:-5])  # the head and most of the body
        got = closed_within(sock, 3.0)
        assert got.startswith(b"HTTP/1.1 408") and b"did not arrive" in got, got
        sock.close()

        sock, sid = adopted()
        time.sleep(0.4)  # longer than the lane waits: the loop has the connection again
        assert answered(*exchange(sock, turn(sid, "after a pause"))[:2], "after a pause")
        assert closed_within(sock, 3.0) == b""  # idle past the header deadline
        sock.close()


def test_clients_sharing_a_session_through_the_lane_take_turns(
        emulator: Any, hermes_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Four keep-alive clients post turns to one session. Each connection is adopted after its
    turns on the loop's path, and the lane hands a turn back to the loop while another turn
    waits there for the session (so, here, nearly always): none is overtaken into a 409, and
    the session's turns never interleave."""
    import itertools
    from concurrent.futures import ThreadPoolExecutor

    from hermes.store import Store

    monkeypatch.setenv("DEEPSEEK_API_KEY", "sk-deepseek-test-0001")
    with gateway(hermes_home, Config(), token=TOKEN, allowed_base_urls=(emulator.root,), lock_wait_s=20) as url:
        host, port = url.removeprefix("http://").rsplit(":", 1)
        with socket.create_connection((host, int(port)), timeout=30) as sock:
            sid = new_session(sock, emulator)

        def client(i: int) -> list[int]:
            statuses = []
            with socket.create_connection((host, int(port)), timeout=60) as sock:
                for j in range(8):
                    head = exchange(sock, turn(sid, f"c{i} t{j}"))[0]
                    statuses.append(int(head.split()[1]))
            return statuses

        with ThreadPoolExecutor(4) as pool:
            statuses = [s for out in pool.map(client, range(4)) for s in out]
    assert statuses == [200] * 32, statuses
    with Store(hermes_home / "state.db") as s:
        history = s.load(sid)
    assert [m.role for m in history] == ["user", "assistant", "tool", "assistant"] * 32
    users = [m.text for m in history if m.role == "user"]
    for i in range(4):
        assert [u for u in users if u.startswith(f"c{i} ")] == [f"c{i} t{j}" for j in range(8)]
    # in turn, not one client's turns back to back while the others wait (a lane that did not
    # check the queue ran up to 8 in a row here; with the check, strict rotation)
    longest = max(len(list(run)) for _, run in itertools.groupby(u.split(" ")[0] for u in users))
    assert longest <= 3, users


def test_without_the_lane_every_turn_goes_by_the_loop(
        emulator: Any, hermes_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``--lane-linger 0`` (``lane_linger_s=0``) turns the lane off: turns are served as before."""
    monkeypatch.setenv("DEEPSEEK_API_KEY", "sk-deepseek-test-0001")
    with gateway(hermes_home, Config(), token=TOKEN, allowed_base_urls=(emulator.root,), lane_linger_s=0) as url:
        host, port = url.removeprefix("http://").rsplit(":", 1)
        with socket.create_connection((host, int(port)), timeout=30) as sock:
            sid = new_session(sock, emulator)
            for content in ("one", "two", "three"):
                assert answered(*exchange(sock, turn(sid, content))[:2], content)
        assert lane_turns(url) == 0


def test_a_client_that_does_not_read_its_answers_does_not_hold_the_lanes_thread(
        emulator: Any, hermes_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The lane writes what the client's socket takes and gives the rest to the event loop:
    with one turn thread, a client that sends requests without reading the answers (until
    they fill its small window and the server's buffers) does not keep a second client's turn
    from running; it then reads every answer, in order, and its connection serves on. A turn
    too large for the context budget is a 400 (an SDK retries a 500, and each retry is a turn)."""
    import threading

    from hermes.store import Store

    monkeypatch.setenv("DEEPSEEK_API_KEY", "sk-deepseek-test-0001")
    with gateway(hermes_home, Config(), token=TOKEN, allowed_base_urls=(emulator.root,), workers=1,
                 lane_linger_s=5.0) as url:
        host, port = url.removeprefix("http://").rsplit(":", 1)
        slow = socket.socket()
        slow.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # a small window
        slow.settimeout(60)
        slow.connect((host, int(port)))
        with slow, socket.create_connection((host, int(port)), timeout=10) as other:
            sid = new_session(slow, emulator)
            assert answered(*exchange(slow, turn(sid, "first"))[:2], "first")
            # answers the lane writes at once: a session id of 12 KB, echoed by each 404; 400 of
            # them fill the small window and whatever the server's socket buffers (4 MB at most)
            lost = ["x" * 12_000 + f"-{n}" for n in range(400)]
            sender = threading.Thread(target=slow.sendall, args=(b"".join(turn(x, "?") for x in lost),), daemon=True)
            sender.start()
            deadline, seen = time.monotonic() + 30, -1
            while (now := lane_turns(url)) != seen and time.monotonic() < deadline:  # until the buffers are full
                seen = now
                time.sleep(0.5)
            assert 20 <= seen < len(lost), seen

            other_sid = new_session(other, emulator)  # the one turn thread is free for it
            other.settimeout(8.0)  # were the thread still held by the first client, this would time out
            assert answered(*exchange(other, turn(other_sid, "meanwhile"))[:2], "meanwhile")
            head, body, _ = exchange(other, turn(other_sid, "many words " * 40_000))
            assert head.startswith(b"HTTP/1.1 400") and b"context budget" in body, head + body

            buf = b""
            for x in lost:
                while (end := buf.find(b"\r\n\r\n")) < 0:
                    buf += slow.recv(65536)
                head, buf = buf[:end], buf[end + 4:]
                length = next(int(line.split(b":", 1)[1]) for line in head.split(b"\r\n")[1:]
                              if line.lower().startswith(b"content-length:"))
                while len(buf) < length:
                    buf += slow.recv(65536)
                assert head.startswith(b"HTTP/1.1 404") and x.encode() in buf[:length], head
                buf = buf[length:]
            sender.join(timeout=10)
            assert answered(*exchange(slow, turn(sid, "and on"))[:2], "and on")
    with Store(hermes_home / "state.db") as s:
        users = [m.text for m in s.load(sid) if m.role == "user"]
    assert users == ["first", "and on"]


def test_the_openai_facade_goes_by_the_lane_too(emulator: Any, hermes_home: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """The official SDK on one keep-alive connection, a session named by X-Hermes-Session:
    completions after the first are the lane's, answered in the same shape (reasoning,
    usage, the session header), errors in OpenAI's shape; every question stored once."""
    import openai

    from hermes.store import Store

    monkeypatch.setenv("DEEPSEEK_API_KEY", "sk-deepseek-test-0001")
    with gateway(hermes_home, Config(), token=TOKEN, allowed_base_urls=(emulator.root,), lane_linger_s=5.0) as url:
        host, port = url.removeprefix("http://").rsplit(":", 1)
        with socket.create_connection((host, int(port)), timeout=30) as sock:
            sid = new_session(sock, emulator)
        client = openai.OpenAI(base_url=f"{url}/v1", api_key=TOKEN, max_retries=0,
                               default_headers={"X-Hermes-Session": sid})
        with client:
            before = lane_turns(url)
            answers = [client.chat.completions.with_raw_response.create(
                model="hermes", messages=[{"role": "user", "content": f"q{n}"}]) for n in range(4)]
            assert lane_turns(url) == before + 3  # the first on the loop, then the lane
            first, *rest = [a.parse() for a in answers]
            for n, (raw, done) in enumerate(zip(answers, [first, *rest], strict=True)):
                assert f"'q{n}'" in (done.choices[0].message.content or "")
                assert raw.headers["x-hermes-session"] == sid
                assert done.usage is not None and done.usage.total_tokens > 0

            def shape(d: Any) -> list[str]:
                return sorted(d.model_dump(exclude_none=True)) + sorted(d.choices[0].message.model_dump(exclude_none=True))

            assert all(shape(d) == shape(first) for d in rest)
            assert all(getattr(d.choices[0].message, "reasoning_content", None) for d in [first, *rest])

            with pytest.raises(openai.NotFoundError) as lost:  # on the lane: the turn itself refuses it
                client.chat.completions.create(model="hermes", messages=[{"role": "user", "content": "x"}],
                                               extra_headers={"X-Hermes-Session": "no-such-session"})
            assert lost.value.code == "not_found" and lost.value.response.headers["x-hermes-session"] == "no-such-session"
            assert lane_turns(url) == before + 4
            again = client.chat.completions.create(model="hermes", messages=[{"role": "user", "content": "q4"}])
            assert "'q4'" in (again.choices[0].message.content or "")
    with Store(hermes_home / "state.db") as s:
        assert [m.text for m in s.load(sid) if m.role == "user"] == [f"q{n}" for n in range(5)]
