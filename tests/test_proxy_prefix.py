"""The proxy recognises a turn by what it shows *and* the conversation before it (#34 item 5).

Kimi numbers tool-call ids per conversation (``functions.list_files:0``), so two conversations
under one key whose first call is the same showed the proxy one turn: each was restored the
other's reasoning, silently (Kimi accepts any ``reasoning_content``).
"""

from __future__ import annotations

from typing import Any

import openai
from _proxy import RESULT, openai_step, running_proxy
from hypothesis import given, settings
from hypothesis import strategies as st

CALL = '#call=list_files{"path": "."}'


def test_two_conversations_with_the_same_first_call_each_get_their_own_reasoning(emulator: Any) -> None:
    with running_proxy(emulator) as px:
        client = openai.OpenAI(base_url=px.url("kimi"), api_key="sk-one-key-for-both", max_retries=0)
        convs: dict[str, list[dict[str, Any]]] = {}
        thoughts: dict[str, list[str]] = {}
        for name in ("summarise", "translate"):
            msgs: list[dict[str, Any]] = [{"role": "user", "content": f"{name} the listing {CALL}"}]
            thoughts[name] = []
            msg = openai_step(client, "kimi-k2.6", msgs, False, seen=thoughts[name])
            assert msg["tool_calls"][0]["id"] == "functions.list_files:0"
            convs[name] = [*msgs, msg, {"role": "tool", "tool_call_id": "functions.list_files:0", "content": RESULT}]
        assert thoughts["summarise"] != thoughts["translate"], "two turns that look alike, thought apart"
        for name in ("summarise", "translate"):
            before = len(emulator.requests("kimi"))
            openai_step(client, "kimi-k2.6", convs[name], False)
            sent = emulator.requests("kimi")[before]["body"]["messages"][1]
            assert sent.get("reasoning_content") == thoughts[name][0], name


_MSG = st.fixed_dictionaries({"role": st.sampled_from(("user", "assistant", "tool", "system")),
                              "content": st.text(max_size=8)})


@settings(max_examples=200, deadline=None)
@given(msgs=st.lists(_MSG, min_size=1, max_size=6), i=st.integers(0, 5), extra=st.text(min_size=1, max_size=8))
def test_the_prefix_changes_with_the_conversation_and_not_with_what_clients_rewrite(
        msgs: list[dict[str, Any]], i: int, extra: str) -> None:
    from hermes.proxy.memory import prefixes

    i %= len(msgs)
    base = prefixes(msgs)
    # a system prompt rewritten, reasoning kept or dropped: the same conversation
    same = [{**m, "content": m["content"] + extra} if m["role"] == "system" else
            {**m, "reasoning_content": extra} if m["role"] == "assistant" else m for m in msgs]
    assert prefixes(same) == base
    # anything else a message shows: another conversation from that message on
    if msgs[i]["role"] != "system":
        other = [*msgs[:i], {**msgs[i], "content": msgs[i]["content"] + extra}, *msgs[i + 1:]]
        got = prefixes(other)
        assert got[:i + 1] == base[:i + 1] and got[i + 1] != base[i + 1]
