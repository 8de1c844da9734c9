"""``hermes.agent.runtime.Runtime``: the one object behind ``hermes chat``, its REPL and the gateway.

What must hold, over real HTTP against the emulators and a real state.db:

* one runtime built from (config, route table, store) opens a session, runs turns under the
  session lease, switches its route (refusing before any write), compresses it and reopens it;
* the REPL and a gateway turn switch a session the same way: a config alias names its own
  provider, and the key sent is the new provider's (the REPL used to keep the first route's
  provider for an alias, and kept sending the first provider's key after ``/model``);
* config.toml and routes.toml are read when the runtime is built, not per turn;
* agent events are typed, and the CLI printer and the gateway's SSE mapper read the same ones.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any, get_args

import httpx
import orjson
import pytest
from _harness import Hostile, gateway, hostile

from hermes.agent.runtime import Runtime
from hermes.config.paths import routes_path
from hermes.config.settings import Alias, Config, load_config
from hermes.core.errors import ConfigError
from hermes.core.events import (
    AgentEvent,
    Compacted,
    LessonLearned,
    Requested,
    Streamed,
    ToolFinished,
    Waiting,
)
from hermes.core.messages import Compaction
from hermes.routing.resolve import Resolved, load_table
from hermes.store import Store
from hermes.tools.builtins import Tool, Toolbox
from hermes.wire import ToolSpec

DEEPSEEK_KEY = "sk-deepseek-runtime-0001"
OPENROUTER_KEY = "sk-or-runtime-0002"
ROUTER_MODEL = "anthropic/claude-sonnet-4.5"


def _toolbox() -> Toolbox:
    spec = ToolSpec("list_dir", "List a directory", {"type": "object", "properties": {"path": {"type": "string"}}})
    return Toolbox([Tool(spec, lambda args, ctx: "a.py\nb.py\n")])


def _checkpoints(store: Store, sid: str) -> int:
    return sum(isinstance(p, Compaction) for m in store.load(sid) for p in m.parts)


def test_one_runtime_opens_switches_compresses_and_reopens(emulator: Any, tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DEEPSEEK_API_KEY", DEEPSEEK_KEY)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-runtime-0003")
    with Store(tmp_path / "state.db") as store:
        rt = Runtime(Config(), load_table(None), store)
        sid, resolved = rt.open(provider="deepseek", model="deepseek-v4-pro", base_url=emulator.url("deepseek"),
                                title="one runtime")
        info = rt.store.get_session(sid)  # a draft until its first step commits: nothing stored yet
        assert (info.provider, info.model, info.base_url) == ("deepseek", "deepseek-v4-pro", emulator.url("deepseek"))
        assert not rt.stored(sid) and store.list_sessions() == []

        events: list[AgentEvent] = []
        agent = rt.agent(_toolbox(), api_key=rt.key(resolved), on_event=events.append)
        first = rt.turn(agent, sid, "which file is largest?", resolved)
        assert first.stopped == "answer" and first.steps == 2
        assert store.lease_holder(sid) is None, "the turn's lease is released"
        assert agent.store is rt.store, "the fenced view is only lent for the turn"
        assert rt.stored(sid) and store.get_session(sid).title == "one runtime"
        assert [type(e) for e in events if isinstance(e, Waiting | Requested)] == [Waiting, Requested] * 2

        # a switch the caller refuses writes nothing
        def refuse(r: Resolved) -> None:
            raise ConfigError(f"no key for {r.route.key}")

        with pytest.raises(ConfigError):
            rt.switch(store.get_session(sid), provider="anthropic", model="claude-opus-4-6",
                      base_url=emulator.url("anthropic"), check=refuse)
        assert store.get_session(sid).provider == "deepseek"
        # an accepted one is stored, and the next turn replays to the new route
        moved = rt.switch(store.get_session(sid), provider="anthropic", model="claude-opus-4-6",
                          base_url=emulator.url("anthropic"))
        assert (store.get_session(sid).provider, moved.route.key) == ("anthropic", "anthropic")
        before = len(emulator.requests("anthropic"))
        rt.turn(rt.agent(_toolbox(), api_key=rt.key(moved)), sid, "and now?", moved)
        assert len(emulator.requests("anthropic")) - before == 2

        # reopened without flags: the route the session stores, nothing written
        again, reopened = rt.open(resume=sid)
        assert (again, reopened.route.key, reopened.model) == (sid, "anthropic", "claude-opus-4-6")

        # compressed on that route, under the lease, as one stored turn
        line = rt.compress(sid, keep_last=1, toolbox=_toolbox())
        assert line.startswith("compacted ") and _checkpoints(store, sid) == 1
        assert store.lease_holder(sid) is None


def test_config_and_routes_are_read_when_the_runtime_is_built(emulator: Any, hermes_home: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DEEPSEEK_API_KEY", DEEPSEEK_KEY)
    hermes_home.mkdir(parents=True, exist_ok=True)
    rt = Runtime.load(store=Store(hermes_home / "state.db"))
    with rt.store:
        sid, resolved = rt.open(provider="deepseek", model="deepseek-v4-pro", base_url=emulator.url("deepseek"))
        # written after the runtime was built: a budget that would force compaction, a new route row
        (hermes_home / "config.toml").write_text("context_budget = 40\n")
        routes_path().write_text('[[route]]\nkey = "later"\nwire = "openai_chat"\nhosts = ["llm.later.example"]\n')
        assert load_config().context_budget == 40 and any(r.key == "later" for r in load_table(routes_path()))
        for text in ("one", "two", "three"):
            rt.turn(rt.agent(_toolbox(), api_key=rt.key(resolved)), sid, text, resolved)
        assert _checkpoints(rt.store, sid) == 0, "a turn read config.toml again"
        with pytest.raises(Exception, match="later"):
            rt.route(provider="later", model="deepseek-v4-pro")


def test_gateway_reads_config_once_too(emulator: Any, hermes_home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DEEPSEEK_API_KEY", DEEPSEEK_KEY)
    with gateway(hermes_home, Config(), allowed_base_urls=(emulator.root,)) as url, httpx.Client(base_url=url) as c:
        sid = c.post("/v1/sessions", json={"provider": "deepseek", "model": "deepseek-v4-pro",
                                           "base_url": emulator.url("deepseek")}).json()["id"]
        (hermes_home / "config.toml").write_text("context_budget = 40\n")
        for text in ("one", "two", "three"):
            r = c.post(f"/v1/sessions/{sid}/messages", json={"content": text}, timeout=60)
            assert r.status_code == 200, r.text
        with Store(hermes_home / "state.db") as store:
            assert _checkpoints(store, sid) == 0, "a gateway turn read config.toml again"


def _alias_config(base_url: str) -> str:
    return f'[aliases]\nfast = {{ provider = "deepseek", model = "deepseek-v4-pro", base_url = "{base_url}" }}\n'


def _keys_seen(server: Hostile) -> set[str]:
    return {str(r["headers"].get("Authorization", r["headers"].get("authorization", ""))) for r in server.requests}


def test_repl_and_gateway_switch_a_session_alike(emulator: Any, hermes_home: Path, tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """``/model fast`` in the REPL and ``{"model": "fast"}`` on a gateway turn land on the alias's
    provider, and the request carries that provider's key, not the one the session started with.
    (The alias's host is a recording server: the emulators keep no keys in their logs.)"""
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env.update(HERMES_HOME=str(hermes_home), DEEPSEEK_API_KEY=DEEPSEEK_KEY, OPENROUTER_API_KEY=OPENROUTER_KEY)

    def hermes(*args: str, script: str | None = None) -> subprocess.CompletedProcess[str]:
        r = subprocess.run([sys.executable, "-m", "hermes", *args], input=script, capture_output=True,
                           text=True, env=env, timeout=120, cwd=tmp_path)
        assert r.returncode == 0, r.stderr
        return r

    with hostile() as server:
        hermes_home.mkdir(parents=True, exist_ok=True)
        (hermes_home / "config.toml").write_text(_alias_config(server.url))
        # the REPL
        out = hermes("chat", "-q", "hello", "-p", "openrouter", "-m", ROUTER_MODEL, "-u", emulator.url("openrouter"),
                     "--json")
        sid = orjson.loads(out.stdout)["session_id"]
        r = hermes("chat", "--resume", sid, script="/model fast\nand now?\n/quit\n")
        assert "now deepseek · deepseek-v4-pro" in r.stderr and "hello from the hostile server" in r.stdout
        assert _keys_seen(server) == {f"Bearer {DEEPSEEK_KEY}"}, "the REPL sent another provider's key"
        listed = orjson.loads(hermes("sessions", "list", "--json").stdout)
        assert [(s["provider"], s["model"]) for s in listed if s["id"] == sid] == [("deepseek", "deepseek-v4-pro")]

        # the gateway, same config, same switch
        server.requests.clear()
        monkeypatch.setenv("DEEPSEEK_API_KEY", DEEPSEEK_KEY)
        monkeypatch.setenv("OPENROUTER_API_KEY", OPENROUTER_KEY)
        with gateway(tmp_path / "gateway-home", load_config(), allowed_base_urls=(emulator.root,)) as url, \
                httpx.Client(base_url=url) as c:
            gsid = c.post("/v1/sessions", json={"provider": "openrouter", "model": ROUTER_MODEL,
                                                "base_url": emulator.url("openrouter")}).json()["id"]
            turn = c.post(f"/v1/sessions/{gsid}/messages", json={"content": "and now?", "model": "fast"}, timeout=60)
            assert turn.status_code == 200, turn.text
            assert (turn.json()["route"], turn.json()["model"]) == ("deepseek", "deepseek-v4-pro")
        assert _keys_seen(server) == {f"Bearer {DEEPSEEK_KEY}"}


def test_cli_printer_and_gateway_stream_read_the_same_typed_events(emulator: Any, tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    from hermes.cli.chat import _Printer
    from hermes.gateway.turns import SseEvents

    monkeypatch.setenv("DEEPSEEK_API_KEY", DEEPSEEK_KEY)
    with Store(tmp_path / "state.db") as store:
        rt = Runtime(Config(aliases={"fast": Alias("deepseek", "deepseek-v4-pro", emulator.url("deepseek"))}),
                     load_table(None), store)
        sid, resolved = rt.open(model="fast")
        events: list[AgentEvent] = []
        result = rt.turn(rt.agent(_toolbox(), api_key=rt.key(resolved), on_event=events.append), sid,
                         "which file is largest?", resolved)
    union = get_args(AgentEvent)
    assert events and all(isinstance(e, union) for e in events)
    assert {type(e) for e in events} >= {Waiting, Streamed, Requested, ToolFinished}

    printer = _Printer(quiet=False, show_reasoning=True)
    for e in events:
        printer(e)
    printer(LessonLearned("a lesson"))
    printer(Compacted("compacted 4 messages into a checkpoint"))
    printer.end_turn(result.answer)
    out, err = capsys.readouterr()
    assert out.strip() == result.answer.strip()
    assert "thinking: " in err and "→ list_dir" in err and "← list_dir: 10 chars" in err
    assert "hermes: a lesson" in err and "hermes: compacted 4 messages" in err

    sent: list[tuple[str, dict[str, Any]]] = []
    fold = SseEvents()
    for e in [*events, LessonLearned("a lesson")]:
        sent += fold.take(e)
    names = [n for n, _ in sent]
    assert names.index("reasoning") < names.index("tool_call") < names.index("tool_result") < names.index("text")
    call = next(d for n, d in sent if n == "tool_call")
    assert call["name"] == "list_dir" and orjson.loads(call["arguments"]) == {"path": "."}
    assert "".join(d["text"] for n, d in sent if n == "text") == result.answer
    assert sent[-1] == ("learned", {"note": "a lesson"})
