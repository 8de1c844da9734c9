"""The web view without a browser: who may see it, what the request matrix makes of the log,
the live tail's resume, the log's per-turn decisions, and `hermes ui` as a process.

The browser half (login, chips, branch, live) is tests/test_ui_browser.py.
"""

from __future__ import annotations

import asyncio
import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st
from starlette.testclient import TestClient

from hermes.config.settings import Config
from hermes.core.messages import Message, Reasoning, RouteKey, Text, ToolCall, ToolResult, blob_hash
from hermes.gateway.app import GatewayOptions, create_app
from hermes.replay import plan_replay
from hermes.routing.resolve import resolve
from hermes.store import Store
from hermes.store.requestlog import plan_summary
from hermes.ui import create_ui
from hermes.ui.auth import is_loopback_host, safe_next
from hermes.ui.data import request_matrix
from hermes.ui.live import tail_events

TOKEN = "ui-test-token-0123456789abcdef"
LOOP = ("127.0.0.1", 50000)


def client(app: Any, *, host: str = "127.0.0.1:8643", peer: tuple[str, int] = LOOP) -> TestClient:
    return TestClient(app, base_url=f"http://{host}", client=peer, follow_redirects=False)


@pytest.fixture
def store(hermes_home: Path) -> Store:
    s = Store()
    sid = s.create_session(provider="deepseek", model="deepseek-v4", title="hello")
    origin = RouteKey("deepseek", "api.deepseek.com", "deepseek-v4", "openai_chat")
    s.append_turn(sid, [Message.user("hi <b>there</b>"),
                        Message("assistant", (Reasoning("think <script>alert(1)</script>", origin),
                                              Text("answer")))])
    return s


# ----------------------------------------------------------------------------- access


def test_tokenless_answers_loopback_only_and_refuses_rebinding_hosts(store: Store) -> None:
    app = create_ui(store)
    assert client(app).get("/").status_code == 200
    assert client(app, host="localhost:8643").get("/").status_code == 200
    # DNS rebinding: a name that resolves to 127.0.0.1 but is not a loopback name
    assert client(app, host="attacker.example:8643").get("/").status_code == 403
    assert client(app, peer=("10.0.0.5", 1234)).get("/").status_code == 403


def test_token_login_sets_httponly_strict_cookie_scoped_to_the_ui(store: Store) -> None:
    app = create_ui(store, token=TOKEN)
    c = client(app)
    r = c.get("/s/x", headers={"accept": "text/html"})
    assert r.status_code == 303 and r.headers["location"] == "/login?next=/s/x"
    assert c.get("/").status_code == 401  # not a browser: no redirect, an error
    bad = c.post("/login", content="token=nope&next=/s/x", headers={"content-type": "application/x-www-form-urlencoded"})
    assert bad.status_code == 401 and "set-cookie" not in bad.headers
    ok = c.post("/login", content=f"token={TOKEN}&next=https://evil.example/", headers={
        "content-type": "application/x-www-form-urlencoded"})
    assert ok.status_code == 303 and ok.headers["location"] == "/"  # no open redirect
    cookie = ok.headers["set-cookie"].lower()
    assert "httponly" in cookie and "samesite=strict" in cookie and "path=/" in cookie
    value = c.cookies["hermes_ui"]
    assert TOKEN not in value and len(value) == 64  # derived from the token, not the token
    assert c.get("/").status_code == 200  # the cookie now rides along
    assert client(app).get("/", headers={"authorization": f"Bearer {TOKEN}"}).status_code == 200


def test_cross_origin_login_post_is_refused(store: Store) -> None:
    c = client(create_ui(store, token=TOKEN))
    r = c.post("/login", content=f"token={TOKEN}", headers={
        "content-type": "application/x-www-form-urlencoded", "origin": "http://evil.example"})
    assert r.status_code == 403 and "set-cookie" not in r.headers


def test_gateway_mounts_the_ui_behind_its_token_and_the_api_ignores_the_cookie(store: Store) -> None:
    app = create_app(store, Config(), GatewayOptions(token=TOKEN, toolbox=lambda: _no_tools()))
    with client(app) as c:
        assert c.get("/ui/").status_code == 401
        r = c.post("/ui/login", content=f"token={TOKEN}", headers={"content-type": "application/x-www-form-urlencoded"})
        assert r.status_code == 303 and "path=/ui/" in r.headers["set-cookie"].lower()
        assert c.get("/ui/").status_code == 200
        sid = store.list_sessions()[0].id
        assert c.get(f"/v1/sessions/{sid}").status_code == 401  # the cookie is no API credential ...
        bearer = {"authorization": f"Bearer {c.cookies['hermes_ui']}"}
        assert c.get(f"/v1/sessions/{sid}", headers=bearer).status_code == 401  # ... nor is its value


def _no_tools() -> Any:
    from hermes.tools.builtins import Toolbox

    return Toolbox([])


def test_headers_forbid_inline_script_and_model_text_is_escaped(store: Store) -> None:
    c = client(create_ui(store))
    sid = store.list_sessions()[0].id
    r = c.get(f"/s/{sid}")
    assert "script-src 'self'" in r.headers["content-security-policy"]
    assert "<script>alert(1)" not in r.text and "&lt;script&gt;alert(1)&lt;/script&gt;" in r.text
    assert "&lt;b&gt;there&lt;/b&gt;" in r.text
    assert c.get(f"/s/{sid[:4]}").status_code == 404  # exact ids only in URLs
    assert c.get("/static/../app.py").status_code == 404


@given(st.text(max_size=30))
def test_loopback_host_names(host: str) -> None:
    if is_loopback_host(host):
        h = host.strip().lower()
        assert h.startswith(("127.", "localhost", "[::1]", "::1", "0:0:0:0:0:0:0:1", "[0:")) or ".localhost" in h
    for yes in ("127.0.0.1", "127.0.0.1:80", "localhost:1", "[::1]:8080", "::1"):
        assert is_loopback_host(yes)
    for no in ("127.0.0.1.nip.io", "evil.com", "[::2]:80", "0.0.0.0", ""):
        assert not is_loopback_host(no)


@given(st.text(max_size=40))
def test_next_never_leaves_the_ui(value: str) -> None:
    got = safe_next(value, "/ui")
    assert got.startswith("/ui/") and not got.startswith("//")


# ----------------------------------------------------------------------------- the request log


def test_log_records_each_assistant_turn_decision_as_the_planner_made_it() -> None:
    ds = RouteKey("deepseek", "api.deepseek.com", "deepseek-v4", "openai_chat")
    history = [Message.user("q"),
               Message("assistant", (Reasoning("why", ds), ToolCall("c1", "f", "{}"))),
               Message("tool", (ToolResult("c1", "ok"),)), Message("assistant", (Text("plain"),))]
    for route in ("deepseek", "anthropic", "mistral"):
        target = resolve(route, None, {"deepseek": "deepseek-v4", "anthropic": "claude-opus-5",
                                       "mistral": "mistral-medium-latest"}[route])
        plan = plan_replay(history, target)
        rec = orjson.loads(orjson.dumps(plan_summary(plan)))
        want = {m.index: [[d.action, ",".join(d.fields), d.reason] for d in m.decisions]
                for m in plan.messages if m.role == "assistant"}
        got = {}
        for first, last, k in rec["turns"]:  # runs: every assistant index in [first, last] has kind k
            for i in want:
                if first <= i <= last:
                    got[i] = [[a, f, rec["reasons"][n]] for a, f, n in rec["kinds"][k]]
        assert got == want and list(got) == [1, 3]
        assert "why" not in orjson.dumps(rec).decode()  # decisions, never reasoning text


def test_log_runs_cost_a_few_entries_for_a_long_session_on_one_route() -> None:
    ds = RouteKey("deepseek", "api.deepseek.com", "deepseek-v4", "openai_chat")
    history = [m for i in range(300) for m in (Message.user(f"q{i}"), Message("assistant", (Reasoning("r", ds),
                                                                                             Text("a"))))]
    rec = plan_summary(plan_replay(history, resolve("deepseek", None, "deepseek-v4")))
    assert rec["turns"] == [[1, 599, 0]] and len(rec["kinds"]) == 1


def rec(event: str, **kw: Any) -> dict[str, Any]:
    return {"event": event, "ts": 1.0, "route": "deepseek", "model": "m", "host": "h", "step": 0, **kw}


def k(*decisions: tuple[str, str, int]) -> list[list[Any]]:
    return [list(d) for d in decisions]


def test_matrix_marks_switches_retries_learned_cuts_and_merges_alike_requests() -> None:
    reasons = ["as carried by this route", "must echo", "takes only signed reasoning"]
    sent, pad, drop = k(("field", "reasoning_content", 0)), k(("pad", "reasoning_content", 1)), k(("drop", "", 2))
    records = [
        rec("request", turns=[], kinds=[], reasons=[]),
        rec("request", step=1, turns=[[1, 1, 0]], kinds=[sent], reasons=reasons),  # goes on alike: merged
        rec("request", step=2, turns=[[1, 1, 0], [3, 3, 1]], kinds=[sent, pad], reasons=reasons),  # merged too
        rec("request_failed", route="openrouter", status=400, turns=[[1, 3, 0]],
            kinds=[k(("field", "reasoning_details", 0))], reasons=reasons, error="bad"),
        rec("learned", route="openrouter", dropped=["reasoning_details"], status=400),
        rec("request", route="openrouter", turns=[[1, 3, 0]], kinds=[pad], reasons=reasons),
        rec("request", route="anthropic", window=3, turns=[[3, 3, 0]], kinds=[drop], reasons=reasons),
        rec("request", route="anthropic", fields={"reasoning_content": {"messages": 1, "chars": 3, "hashes": []}}),
    ]
    m = request_matrix(records, [1, 3])
    assert m.rows == [1, 3]
    first, failed, retry, blocks, legacy = m.columns
    assert (first.first, first.n) == (1, 3) and first.carriers == ["reasoning_content"]
    assert first.cells[1]["reasoning_content"].action == "sent" and first.cells[3]["reasoning_content"].action == "padded"
    assert [c.switch for c in m.columns] == [False, True, False, True, False]
    assert failed.status == 400 and failed.learned == ["learned after HTTP 400: stop sending reasoning_details"]
    assert failed.cells[3]["reasoning_details"].action == "sent"  # the run [1, 3] covers row 3
    assert retry.retry and not failed.retry and not blocks.retry
    assert retry.cells[1]["reasoning_content"].action == "padded"
    assert retry.cells[1]["reasoning_content"].reason == "must echo"
    assert blocks.cells[3]["dropped"].reason == "takes only signed reasoning"
    assert blocks.cells[1]["cut"].action == "cut" and blocks.carriers[0] == "cut"
    assert legacy.legacy.startswith("RC 1×3ch") and not legacy.cells


# ----------------------------------------------------------------------------- live tail


def test_live_tail_sends_new_records_only_and_resumes_at_last_event_id(tmp_path: Path) -> None:
    log = tmp_path / "hermes.log"
    log.write_bytes(b"".join(orjson.dumps({"event": "request", "session": f"old{i}"}) + b"\n" for i in range(3)))

    async def collect(last_id: str | None, backlog: int, append: list[bytes]) -> list[str]:
        out: list[str] = []

        async def writer() -> None:
            await asyncio.sleep(0.05)
            with log.open("ab") as f:
                for line in append:
                    f.write(line)

        task = asyncio.ensure_future(writer())
        async for chunk in tail_events(log, last_id=last_id, session="s1", shape=lambda r: r, backlog=backlog,
                                       poll_s=0.02, lifetime_s=0.3):
            out.append(chunk.decode())
        await task
        return out

    new = [orjson.dumps({"event": "request", "session": "s1", "n": 1}) + b"\n",
           orjson.dumps({"event": "request", "session": "other"}) + b"\n",
           b'{"event": "request", "session": "s1", "n": 2}']  # unterminated: still being written
    chunks = asyncio.run(collect(None, 0, new))
    records = [orjson.loads(c.split("data: ", 1)[1]) for c in chunks if "data: " in c]
    assert [r.get("n") for r in records] == [1]
    last = next(c for c in chunks if "data: " in c).split("\n", 1)[0].removeprefix("id: ")
    with log.open("ab") as f:
        f.write(b"\n")
    again = asyncio.run(collect(last, 0, []))
    assert [orjson.loads(c.split("data: ", 1)[1])["n"] for c in again if "data: " in c] == [2]


# ----------------------------------------------------------------------------- hermes ui


def test_hermes_ui_prints_a_loopback_url_and_serves_this_home(store: Store, hermes_home: Path) -> None:
    proc = subprocess.Popen([sys.executable, "-m", "hermes", "ui", "--port", "0"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        url = proc.stdout.readline().strip() if proc.stdout else ""
        assert url.startswith("http://127.0.0.1:") and url.endswith("/ui/")
        deadline = time.monotonic() + 10
        while True:
            try:
                page = httpx.get(url, timeout=5)
                break
            except httpx.ConnectError:
                assert time.monotonic() < deadline
                time.sleep(0.05)
        assert page.status_code == 200 and store.list_sessions()[0].id in page.text
        assert httpx.get(url.removesuffix("ui/"), follow_redirects=True).url == url  # / leads to the UI
    finally:
        proc.terminate()
        proc.wait(10)


def test_checkpoint_is_drawn_and_the_matrix_cuts_what_it_replaced(store: Store) -> None:
    from hermes.core.messages import Compaction
    from hermes.store.requestlog import log_event

    sid = store.list_sessions()[0].id
    ds = RouteKey("deepseek", "api.deepseek.com", "deepseek-v4", "openai_chat")
    store.append_turn(sid, [Message("user", (Compaction("summary of <i>it</i>", 2),))])
    store.append_turn(sid, [Message.user("next"), Message("assistant", (Reasoning("later", ds), Text("ok")))])
    history = store.load(sid)
    plan = plan_replay(history, resolve("deepseek", None, "deepseek-v4"))
    log_event("request", session=sid, step=0, ms=1.0, **plan_summary(plan))
    c = client(create_ui(store))
    page = c.get(f"/s/{sid}").text
    assert 'class="msg user checkpoint"' in page and "summary of 2 earlier messages" in page
    assert "summary of &lt;i&gt;it&lt;/i&gt;" in page
    matrix = c.get(f"/s/{sid}/requests").text
    row1 = matrix.split('id="t1"', 1)[1].split("</tr>", 1)[0]
    row4 = matrix.split('id="t4"', 1)[1].split("</tr>", 1)[0]
    assert 'class="chip a-cut"' in row1 and "a-cut" not in row4
    assert 'data-carrier="reasoning_content"' in row4 and ">sent<" in row4


def test_live_shows_what_the_proxy_restored_padded_and_stripped() -> None:
    from hermes.ui.data import live_record

    rec = {"ts": 1.0, "event": "proxy", "route": "deepseek", "model": "deepseek-v4", "tenant": "ab12cd34ef",
           "status": 200, "ms": 12.5, "assistant_messages": 3, "recognised": 2, "retried": False,
           "messages": [{"index": 1, "recognised": True, "restored": ["reasoning_content"]},
                        {"index": 3, "recognised": True, "restored": ["reasoning_content"]},
                        {"index": 5, "recognised": False, "padded": ["reasoning_content"], "stripped": ["reasoning"]}]}
    shown = live_record(rec)
    assert shown["who"] == "tenant ab12cd34ef" and shown["status"] == 200
    assert shown["what"] == ("restored reasoning_content×2; padded reasoning_content×1; stripped reasoning×1; "
                             "2/3 turns recognised")
    assert live_record({**rec, "messages": [], "assistant_messages": None})["what"] == "passed through"


def test_matrix_reads_rotated_log_files_oldest_first(store: Store, tmp_path: Path) -> None:
    sid = store.list_sessions()[0].id
    log = tmp_path / "hermes.log"
    for name, route in (("hermes.log.2", "deepseek"), ("hermes.log.1", "openrouter"), ("hermes.log", "anthropic")):
        (tmp_path / name).write_bytes(orjson.dumps(rec("request", session=sid, route=route, turns=[], kinds=[],
                                                          reasons=[]))
                                      + b"\n")
    page = client(create_ui(store, log_path=log)).get(f"/s/{sid}/requests").text
    assert re.findall(r'data-route="(\w+)"', page) == ["deepseek", "openrouter", "anthropic"]


def test_matrix_draws_the_last_requests_unless_asked_for_all(store: Store, tmp_path: Path) -> None:
    sid = store.list_sessions()[0].id
    log = tmp_path / "hermes.log"
    routes = ["deepseek", "mistral"] * 35 + ["anthropic"] * 5  # the five anthropic ones merge into one column
    log.write_bytes(b"".join(orjson.dumps(rec("request", session=sid, route=r, turns=[], kinds=[], reasons=[]))
                             + b"\n" for r in routes))
    c = client(create_ui(store, log_path=log))
    page = c.get(f"/s/{sid}/requests").text
    assert "75 requests logged (" in page and "the last 60 of 71 columns" in page
    assert len(re.findall(r'data-route="', page)) == 60 and "#71–75" in page
    assert len(re.findall(r'data-route="', c.get(f"/s/{sid}/requests?last=0").text)) == 71


def test_branch_records_come_from_each_ancestor_before_the_branch_cut_to_inherited_turns(store: Store) -> None:
    from hermes.ui.data import session_records

    root = store.list_sessions()[0].id  # messages 0 (user) and 1 (assistant)
    store.append_turn(root, [Message.user("more"), Message("assistant", (Text("a3"),))])
    child = store.branch(root, upto_seq=3)
    grandchild = store.branch(child, upto_seq=1)
    created = {s.id: s.created for s in store.list_sessions()}
    logs = {root: [{"session": root, "ts": created[child] - 1, "turns": [[1, 3, 0]]},
                   {"session": root, "ts": created[child] + 1, "turns": [[1, 1, 0]]}],
            child: [{"session": child, "ts": created[grandchild] - 1, "turns": [[1, 1, 0], [3, 3, 1]]}],
            grandchild: [{"session": grandchild, "ts": created[grandchild] + 2, "turns": [[1, 1, 0]]}]}
    got = session_records(store, store.get_session(grandchild), lambda sid: logs[sid])
    assert [(r["session"], r["turns"]) for r in got] == [
        (root, [[1, 1, 0]]), (child, [[1, 1, 0]]), (grandchild, [[1, 1, 0]])]  # later requests and turns left out
    store.delete_session(root)  # the child forgets its parent: the walk stops there
    got = session_records(store, store.get_session(grandchild), lambda sid: logs[sid])
    assert [r["session"] for r in got] == [child, grandchild]


def test_matrix_cells_escape_what_the_log_says(store: Store, tmp_path: Path) -> None:
    """Reasons and carrier names come from the log, which quotes model names a user typed."""
    sid = store.list_sessions()[0].id
    log = tmp_path / "hermes.log"
    evil = '<img src=x onerror="alert(1)">'
    log.write_bytes(orjson.dumps(rec("request", session=sid, model=evil, turns=[[1, 1, 0]],
                                     kinds=[[["field", "<b>x</b>", 0]]], reasons=[f"blob minted by {evil}"])) + b"\n")
    page = client(create_ui(store, log_path=log)).get(f"/s/{sid}/requests").text
    assert "<img" not in page and "<b>x" not in page
    assert 'title="blob minted by &lt;img src=x onerror=&#34;alert(1)&#34;&gt;"' in page
    assert 'data-carrier="&lt;b&gt;x&lt;/b&gt;"' in page


def test_timeline_shows_native_records_as_kind_size_and_hash_never_the_value(store: Store) -> None:
    from hermes.core.messages import NativeRecord

    sid = store.list_sessions()[0].id
    gem = RouteKey("gemini", "generativelanguage.googleapis.com", "gemini-3-pro-preview", "gemini")
    sig, tool_sig = "GEMINI-SIG-" + "A" * 200, "TOOL-SIG-" + "B" * 100
    native = NativeRecord(thought_signature=sig, tool_signatures=(("call_1", tool_sig),))
    store.append_turn(sid, [Message.user("q"), Message("assistant", (Reasoning("", gem, native=native),
                                                                     ToolCall("call_1", "f", "{}")))])
    page = client(create_ui(store)).get(f"/s/{sid}").text
    assert sig not in page and tool_sig not in page
    assert f"thought_signature {len(sig)} chars sha256:{blob_hash(sig)[:12]}" in page
    assert f"tool_signature call_1 {len(tool_sig)} chars sha256:{blob_hash(tool_sig)[:12]}" in page
    assert "native.thought_signature" in page and "native.tool_signatures" in page  # the turn's chips


def test_wrong_login_tokens_back_off_like_wrong_api_tokens(store: Store) -> None:
    from hermes.serving.http import AuthThrottle

    throttle = AuthThrottle(first_s=0.0)
    c = client(create_ui(store, token=TOKEN, throttle=throttle))
    form = {"content-type": "application/x-www-form-urlencoded"}
    for _ in range(3):
        assert c.post("/login", content="token=guess", headers=form).status_code == 401
    assert c.get("/", headers={"authorization": "Bearer guess"}).status_code == 401
    assert throttle.failures["127.0.0.1"][0] == 4  # one back-off step per wrong token
    assert c.get("/").status_code == 401  # no token given at all: not a guess
    assert throttle.failures["127.0.0.1"][0] == 4
