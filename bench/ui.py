"""Web view cost on a long session: 2,000 messages (500 tool turns with reasoning and blobs)
and 250 logged requests whose per-turn decisions come from the real planner (the session
switches between DeepSeek and Anthropic every 100 turns, and so do the requests every 50).

* timeline page (HTML over HTTP, in-process) vs ``session_view`` + ``orjson.dumps`` — the JSON
  that ``GET /v1/sessions/{id}`` and ``hermes sessions show --json`` produce for the same session;
* requests page (the matrix over every logged request, last 60 columns drawn) vs the same
  ``session_view`` JSON: the page needs that view of the session too, plus the log.

    python bench/ui.py            # prints `ui_requests ratio X.XX`, then `ui ratio X.XX` (timeline)
"""

from __future__ import annotations

import base64
import os
import sys
import tempfile
from pathlib import Path

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _timing import best_of, report

from hermes.core.messages import Message, Reasoning, RouteKey, Text, ToolCall, ToolResult
from hermes.replay import plan_replay
from hermes.routing.resolve import resolve
from hermes.store import Store
from hermes.store.requestlog import plan_summary
from hermes.store.views import session_view


def build(store: Store, log: Path, turns: int, requests: int) -> str:
    sid = store.create_session(provider="deepseek", model="deepseek-v4")
    ds = RouteKey("deepseek", "api.deepseek.com", "deepseek-v4", "openai_chat")
    an = RouteKey("anthropic", "api.anthropic.com", "claude-opus-5", "anthropic")
    history: list[Message] = []
    for i in range(turns):
        origin, blob = (an, base64.b64encode(os.urandom(600)).decode()) if (i // 100) % 2 else (ds, None)
        kind = "anthropic.signature" if blob else None
        turn = [Message.user(f"question {i}"),
                Message("assistant", (Reasoning("thinking " * 60, origin, blob, kind),
                                      ToolCall(f"c{i}", "read_file", '{"path": "a.py"}'))),
                Message("tool", (ToolResult(f"c{i}", "file contents " * 20),)),
                Message("assistant", (Reasoning("done " * 30, origin, blob, kind), Text("answer " * 20)))]
        store.append_turn(sid, turn)
        history += turn
    targets = [resolve("deepseek", None, "deepseek-v4"), resolve("anthropic", None, "claude-opus-5")]
    with log.open("wb") as f:
        for r in range(requests):
            upto = len(history) * (r + 1) // requests
            plan = plan_replay(history[:upto], targets[(r // 50) % 2])
            rec = {"ts": 1.0 + r, "event": "request", "session": sid, "step": 0, "ms": 5.0, **plan_summary(plan)}
            f.write(orjson.dumps(rec) + b"\n")
    return sid


def main() -> None:
    from starlette.testclient import TestClient

    from hermes.ui import create_ui

    with tempfile.TemporaryDirectory() as tmp:
        os.environ["HERMES_HOME"] = tmp
        store = Store(Path(tmp) / "state.db")
        log = Path(tmp) / "hermes.log"
        sid = build(store, log, turns=500, requests=250)
        client = TestClient(create_ui(store, log_path=log), base_url="http://127.0.0.1", client=("127.0.0.1", 1))

        def page(path: str) -> None:
            r = client.get(path)
            assert r.status_code == 200, r.text[:200]

        timeline = best_of(lambda: page(f"/s/{sid}"), runs=5)
        view = best_of(lambda: orjson.dumps(session_view(store, sid)), runs=5)
        matrix = best_of(lambda: page(f"/s/{sid}/requests"), runs=5)

        size = log.stat().st_size
        print(f"log: {size / 1e6:.1f} MB for 250 requests of a 2,000-message session "
              f"({size // 250:,} bytes per request line)")
        report("ui_requests", matrix, view)
        report("ui", timeline, view)
        store.close()


if __name__ == "__main__":
    main()
