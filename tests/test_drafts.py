"""A new session is stored with its first step, never before: a first turn that fails (no key,
an unreachable host, an HTTP error, a kill) leaves nothing behind, and what a draft learned
or switched to before its first step is stored with it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import orjson
import pytest
from _cli import CANARY, cli

from hermes.core.errors import StoreError
from hermes.core.messages import Message, RouteKey, Text
from hermes.store import NewSession, Store
from hermes.store.draft import DRAFT_FENCE, Drafting, new_session
from hermes.store.lease import Fenced, Lease, LeaseLost, hold_lease
from hermes.store.pg import PgStore


@pytest.fixture(params=["sqlite", "postgres"])
def store(request: pytest.FixtureRequest) -> Any:
    s = Store() if request.param == "sqlite" else PgStore(request.getfixturevalue("pg_url"))
    yield s
    s.close()


def _step(text: str = "hi") -> list[Message]:
    return [Message.user(text), Message("assistant", (Text(f"answer to {text}"),))]


RK = RouteKey("deepseek", "api.deepseek.com", "deepseek-v4", "openai_chat")


# --- the store: a session row written with its first step ---------------------------------------


def test_a_session_created_with_its_first_step_is_one_transaction(store: Any) -> None:
    new = NewSession("a1b2c3d4e5f6", "deepseek", "deepseek-v4", title="t",
                     model_config={"reasoning_rejections": {"k": {"dropped": ["x"]}}}, created=1.0)
    lease = Lease(new.id, "cli:me:1:ab:1", DRAFT_FENCE)
    assert store.append_turn(new.id, _step(), route_key=RK, usage={"in": 1}, fence=lease, create=new) == 1
    info = store.get_session(new.id)
    assert (info.title, info.provider, info.model, info.message_count, info.turn_count) == (
        "t", "deepseek", "deepseek-v4", 2, 1)
    assert info.created == 1.0 and store.model_config(new.id) == new.model_config
    assert store.lease_holder(new.id) == lease.owner
    # the lease written with the row is the one the turn holds: its next step passes the fence,
    # and renewing keeps the token
    assert store.acquire_lease(new.id, lease.owner, 30.0) == DRAFT_FENCE
    assert store.append_turn(new.id, _step("more"), fence=lease) == 2
    assert store.release_lock(new.id, lease.owner)


def test_a_taken_id_or_a_bad_part_stores_nothing_of_the_new_session(store: Any) -> None:
    taken = store.create_session(provider="deepseek", model="m", title="old")
    with pytest.raises(StoreError):
        store.append_turn(taken, _step(), create=NewSession(taken, "openrouter", "x/y", title="new"))
    info = store.get_session(taken)
    assert (info.title, info.provider, info.message_count) == ("old", "deepseek", 0)

    class NotJson:
        pass

    fresh = NewSession("0f0f0f0f0f0f", "deepseek", "m", model_config={"bad": NotJson()})  # type: ignore[dict-item]
    with pytest.raises(StoreError):
        store.append_turn(fresh.id, _step(), create=fresh)
    with pytest.raises(StoreError, match="unknown session"):
        store.get_session(fresh.id)


def test_lists_leave_empty_sessions_out_unless_asked(store: Any) -> None:
    empty = store.create_session(provider="deepseek", model="m")
    used = store.create_session(provider="deepseek", model="m")
    store.append_turn(used, _step())
    assert [s.id for s in store.list_sessions(include_empty=False)] == [used]
    assert {s.id for s in store.list_sessions()} == {empty, used}
    later = store.create_session(provider="deepseek", model="m")  # newest, but empty
    assert store.latest_session().id == used and later  # --continue takes a session with messages


# --- the draft view ------------------------------------------------------------------------------


def test_a_draft_is_read_switched_and_taught_in_memory_then_stored_whole(store: Any) -> None:
    new = new_session(provider="deepseek", model="deepseek-v4")
    view = Drafting(store, new)
    sid = new.id
    assert view.pending(sid) and view.load(sid) == [] and list(view.export_jsonl(sid)) == []
    assert view.get_session(sid).message_count == 0
    view.patch_model_config(sid, {"reasoning_rejections": {"k": {"dropped": ["reasoning_content"]}}})
    view.update_session(sid, provider="openrouter", model="x/y", base_url="http://127.0.0.1:9/v1")
    with pytest.raises(StoreError, match="nothing to branch"):
        view.branch(sid)
    assert store.list_sessions(include_empty=True) == []  # nothing written yet
    with pytest.raises(StoreError, match="unknown session"):
        store.get_session(sid)

    with hold_lease(view, sid) as lease:
        assert lease.fence == DRAFT_FENCE and view.lease_holder(sid) == lease.owner
        fenced = Fenced(view, lease)
        fenced.append_turn(sid, _step("what is here?\nsecond line"))
        assert not view.pending(sid) and store.lease_holder(sid) == lease.owner
        fenced.append_turn(sid, _step("next"))  # the stored lease row is this turn's
    assert store.lease_holder(sid) is None
    info = store.get_session(sid)
    assert (info.provider, info.model, info.base_url, info.title, info.message_count) == (
        "openrouter", "x/y", "http://127.0.0.1:9/v1", "what is here?", 4)
    assert store.model_config(sid) == {"reasoning_rejections": {"k": {"dropped": ["reasoning_content"]}}}


def test_a_draft_lease_taken_over_meanwhile_refuses_the_first_step(store: Any) -> None:
    """Another writer that somehow created the same id first wins; the draft's step is refused."""
    new = new_session(provider="deepseek", model="m")
    view = Drafting(store, new)
    with hold_lease(view, new.id) as lease:
        store.append_turn(new.id, _step("theirs"), create=NewSession(new.id, "deepseek", "m", title="theirs"))
        with pytest.raises((StoreError, LeaseLost)):
            Fenced(view, lease).append_turn(new.id, _step("ours"))
    assert [m.text for m in store.load(new.id)] == ["theirs", "answer to theirs"]


# --- the CLI: failed first turns store nothing ----------------------------------------------------


def _listed(home: Path) -> list[Any]:
    return list(orjson.loads(cli(home, "sessions", "list", "--all", "--json").stdout))


def test_failed_first_turns_store_no_session_and_json_says_null(emulator: Any, hermes_home: Path) -> None:
    base = ("chat", "-q", "hi", "-p", "deepseek", "-m", "deepseek-v4", "--json")
    failures = {
        "unreachable": (*base, "-u", "http://127.0.0.1:1/v1"),
        "no key": (*base, "-u", emulator.url("deepseek")),
    }
    for what, args in failures.items():
        env_cut = what == "no key"
        r = _run(hermes_home, *args, key=not env_cut)
        assert r.returncode == 1, (what, r.stderr)
        assert orjson.loads(r.stdout)["session_id"] is None, what
    emulator.state.set_control("deepseek", fault="500", times=10)
    try:
        r = _run(hermes_home, *base, "-u", emulator.url("deepseek"))
    finally:
        emulator.state.set_control("deepseek")
    out = orjson.loads(r.stdout)
    assert r.returncode == 1 and out["status"] == 500 and out["session_id"] is None
    assert _listed(hermes_home) == []
    r = _run(hermes_home, "chat", "-c", "-q", "hi", check=False)
    assert r.returncode == 1 and "no session to continue" in r.stderr

    r = _run(hermes_home, *base, "-u", emulator.url("deepseek"))
    out = orjson.loads(r.stdout)
    assert r.returncode == 0 and out["answer"]
    (only,) = _listed(hermes_home)
    assert only["id"] == out["session_id"] and only["title"] == "hi" and only["messages"] >= 2


def test_a_first_turn_killed_mid_request_leaves_nothing(emulator: Any, hermes_home: Path) -> None:
    emulator.state.set_control("deepseek", delay=30.0)
    before = len(emulator.state.requests("deepseek"))
    env = {**_env(hermes_home)}
    p = subprocess.Popen([sys.executable, "-m", "hermes", "chat", "-q", "hi", "-p", "deepseek", "-m", "deepseek-v4",
                          "-u", emulator.url("deepseek")], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and len(emulator.state.requests("deepseek")) == before:
            time.sleep(0.05)
        assert len(emulator.state.requests("deepseek")) > before, "the request never reached the emulator"
        os.kill(p.pid, signal.SIGKILL)
        p.wait(30)
    finally:
        emulator.state.set_control("deepseek", delay=0.0)
        if p.poll() is None:
            p.kill()
        p.communicate()
    assert _listed(hermes_home) == []


def test_the_repl_stores_nothing_for_a_failed_first_turn_and_titles_the_first_answer(
        emulator: Any, hermes_home: Path) -> None:
    args = ("chat", "-p", "deepseek", "-m", "deepseek-v4")
    r = _run(hermes_home, *args, "-u", "http://127.0.0.1:1/v1", input="hello?\n/sessions\n/branch\n/quit\n")
    assert r.returncode == 0, r.stderr
    assert "new session" in r.stderr and "cannot reach 127.0.0.1" in r.stderr and "nothing to branch" in r.stderr
    assert _listed(hermes_home) == []
    r = _run(hermes_home, *args, "-u", emulator.url("deepseek"), input="what is in this dir?\n/quit\n")
    assert r.returncode == 0, r.stderr
    (only,) = _listed(hermes_home)
    assert only["title"] == "what is in this dir?" and only["messages"] >= 2


def test_sessions_list_hides_empty_sessions_unless_all(hermes_home: Path) -> None:
    store = Store(hermes_home / "state.db")
    empty = store.create_session(provider="deepseek", model="m", title="gateway-made")
    used = store.create_session(provider="deepseek", model="m", title="talked")
    store.append_turn(used, _step())
    store.close()
    shown = cli(hermes_home, "sessions", "list").stdout
    assert used in shown and empty not in shown
    assert {s["id"] for s in _listed(hermes_home)} == {empty, used}


def _env(home: Path, *, key: bool = True) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env["HERMES_HOME"] = str(home)
    if key:
        env["HERMES_API_KEY"] = CANARY
    return env


def _run(home: Path, *args: str, key: bool = True, input: str = "", check: bool = False
         ) -> subprocess.CompletedProcess[str]:
    r = subprocess.run([sys.executable, "-m", "hermes", *args], input=input, capture_output=True, text=True,
                       env=_env(home, key=key), timeout=120)
    if check:
        assert r.returncode == 0, r.stderr
    return r

