"""Issue 32 item 3: the proxy's tenant comes from every credential form a route accepts.

Google's keys also travel as ``?key=`` in the query string. A real ``hermes proxy`` process on
the ``gemini-openai`` route in front of a loopback upstream that answers a tool call with
reasoning and a thought signature labelled with the key that asked, and answers every later
request by saying which reasoning it was sent (as a model asked to repeat its thoughts would).
Client A runs a tool turn with ``?key=A``; client B, with ``?key=B``, sends the same
conversation. Before the fix both were the anonymous tenant and B was answered with A's
reasoning. A request with no credential at all restores nothing and its log record says so.
"""

from __future__ import annotations

from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
import orjson
from _loopback import Seen, Upstream, log_records, proxy_process, send_json

from hermes.routing.routes import GEMINI_SKIP_SIGNATURE

MODEL = "gemini-3-pro-preview"
CALL = {"id": "call_0", "type": "function", "function": {"name": "read_file", "arguments": '{"path": "notes.txt"}'}}
FIRST = [{"role": "user", "content": "what is in notes.txt?"}]
SECOND = [*FIRST, {"role": "assistant", "content": None, "tool_calls": [CALL]},
          {"role": "tool", "tool_call_id": "call_0", "content": "the notes"}]
"""The conversation as a client that drops reasoning sends it back: only the visible call."""


def _who(seen: Seen) -> str:
    key = parse_qs(urlsplit(seen.path).query).get("key", [""])[0]
    auth = seen.headers.get("authorization", "").removeprefix("Bearer ")
    return key or auth or seen.headers.get("x-goog-api-key", "") or "nobody"


def _answer(seen: Seen, handler: BaseHTTPRequestHandler) -> None:
    assistants = [m for m in seen.body["messages"] if m["role"] == "assistant"]
    if not assistants:  # first turn: a tool call carrying this key's reasoning
        who = _who(seen)
        call = {**CALL, "extra_content": {"google": {"thought_signature": f"sig-of-{who}"}}}
        msg: dict[str, Any] = {"role": "assistant", "content": None, "reasoning_content": f"private thought of {who}",
                               "tool_calls": [call]}
        finish = "tool_calls"
    else:  # later turns: say which reasoning came back with the history
        carried = [{k: m[k] for k in ("reasoning_content",) if k in m} |
                   {"signatures": [c.get("extra_content") for c in m.get("tool_calls") or []]} for m in assistants]
        msg = {"role": "assistant", "content": "you sent me: " + orjson.dumps(carried).decode()}
        finish = "stop"
    send_json(handler, {"id": "r", "object": "chat.completion", "model": MODEL,
                        "choices": [{"index": 0, "finish_reason": finish, "message": msg}]})


def test_query_string_keys_are_separate_tenants_and_keyless_requests_restore_nothing(tmp_path: Path) -> None:
    home = tmp_path / "home"
    with Upstream(_answer) as up, proxy_process(home, "--upstream", f"gemini-openai={up.url}/v1beta/openai") as px:
        url = f"{px.root}/gemini-openai/chat/completions"

        def post(messages: list[dict[str, Any]], *, key: str | None = None,
                 headers: dict[str, str] | None = None) -> httpx.Response:
            r = httpx.post(url, params={"key": key} if key else None, headers=headers, timeout=30,
                           json={"model": MODEL, "messages": messages})
            assert r.status_code == 200, r.text
            return r

        post(FIRST, key="AIzaAliceKey000000000000000000000000000")
        b = post(SECOND, key="AIzaBobKey00000000000000000000000000000")
        a = post(SECOND, key="AIzaAliceKey000000000000000000000000000")
        # two clients without any credential: the first one's reasoning is not the second's
        post(FIRST)
        nobody = post(SECOND)
        # and a credential in a header is still a tenant of its own
        post(FIRST, headers={"x-goog-api-key": "AIzaCarolKey00000000000000000000000000"})
        carol = post(SECOND, headers={"x-goog-api-key": "AIzaCarolKey00000000000000000000000000"})
        sent = [s.body for s in up.seen]

    assert "Alice" in a.text and "private thought of" in a.text, "A's own reasoning still comes back to A"
    assert "Carol" in carol.text
    for leaked, to in ((b, "Bob"), (nobody, "a keyless client")):
        assert "Alice" not in leaked.text and "private thought" not in leaked.text, f"{to} got another client's reasoning"
        assert GEMINI_SKIP_SIGNATURE in leaked.text, f"{to}'s call went out with the route's pad"
    assert "private thought of nobody" not in nobody.text
    b_sent, a_sent = sent[1], sent[2]
    assert "Alice" not in orjson.dumps(b_sent).decode() and "Alice" in orjson.dumps(a_sent).decode()
    records = log_records(home, "proxy")
    keyless = [r for r in records if r.get("tenant") == "none"]
    assert len(keyless) == 2 and all("no credential" in r.get("memory", "") for r in keyless), records
    assert len({r["tenant"] for r in records}) == 4, "Alice, Bob, Carol and no tenant"
    assert not any("AIza" in orjson.dumps(r).decode() for r in records), "no key in the log"


def test_a_query_string_key_never_reaches_the_error_text(tmp_path: Path) -> None:
    """The upstream URL the proxy names in a 502 has no query: it held the client's key."""
    with Upstream(_answer) as up:
        gone = up.url
    with proxy_process(tmp_path / "home", "--upstream", f"gemini-openai={gone}/v1beta/openai") as px:
        r = httpx.post(f"{px.root}/gemini-openai/chat/completions", params={"key": "AIzaDaveKey0000000000000000000000000"},
                       json={"model": MODEL, "messages": FIRST}, timeout=30)
    assert r.status_code == 502 and "cannot reach" in r.text
    assert "AIzaDave" not in r.text


def test_env_keys_fill_in_only_for_a_request_without_any_credential(tmp_path: Path) -> None:
    """With ``--env-keys`` a ``?key=`` client is sent with its own key only, and keyless clients
    spending the proxy's key are still no tenant: one is never restored another's reasoning."""
    home = tmp_path / "home"
    own = "AIzaProxyOwnKey00000000000000000000000"
    with Upstream(_answer) as up, proxy_process(home, "--env-keys", "--upstream",
                                                f"gemini-openai={up.url}/v1beta/openai",
                                                env={"GEMINI_API_KEY": own}) as px:
        url = f"{px.root}/gemini-openai/chat/completions"
        r = httpx.post(url, params={"key": "AIzaEveKey00000000000000000000000000"}, timeout=30,
                       json={"model": MODEL, "messages": FIRST})
        assert r.status_code == 200
        for _ in range(2):  # two keyless clients, both on the proxy's key
            post = httpx.post(url, timeout=30, json={"model": MODEL, "messages": FIRST})
            assert post.status_code == 200
        second = httpx.post(url, timeout=30, json={"model": MODEL, "messages": SECOND})
        seen = list(up.seen)
    assert own not in orjson.dumps(seen[0].headers).decode(), "a ?key= client is not sent the proxy's key too"
    assert all(own in s.headers.get("authorization", "") for s in seen[1:]), "keyless ones are"
    assert "private thought" not in second.text and GEMINI_SKIP_SIGNATURE in second.text
    assert all(r.get("tenant") == "none" for r in log_records(home, "proxy")[1:])
