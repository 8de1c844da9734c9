"""The real-world corpus: recorded exchanges with real providers judge our decoders and wires.

Each case — built locally by tests/realworld/extract.py into ``$HERMES_REALWORLD_CASES`` (default
tests/realworld/cases/; sources and licences in tests/realworld/SOURCES.md) — holds a
response a real provider sent — whole JSON or SSE text, as recorded — and the conversation of
the next request the recording's client sent, which the real provider accepted. For every case:

1. the recorded response goes through our decoder and fold (the stream decoder for SSE); the
   stored turn must hold every reasoning item exactly as the provider returned it — the same
   entries, keys and bytes (thinking text and signatures, redacted data, encrypted content and
   item ids, ``reasoning_details`` lists, Gemini thought signatures);
2. our next request is built from the stored turn, and its assistant turn is compared with the
   one the recording's client sent: the same carriers, signature bytes and block order. Each
   remaining difference is listed in ``DIFFERENCES`` (and in docs/realworld.md) with why it is
   harmless; a listed difference that disappears fails too, so the list stays true.

Nobody here wrote this data, so it catches what our emulators, written from the same notes as
our adapters, cannot.
"""

from __future__ import annotations

import base64
import json
import os
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import orjson
import pytest

from hermes.agent.provider import get_wire, iter_sse
from hermes.core.messages import Message, Reasoning, Text, ToolResult
from hermes.core.stream import Accumulator, Response
from hermes.replay import Settings, plan_replay
from hermes.routing.resolve import Resolved, resolve

CASE_DIR = Path(os.environ.get("HERMES_REALWORLD_CASES") or Path(__file__).parent / "realworld" / "cases")
CASE_FILES = sorted(CASE_DIR.glob("*/*.json"))
CASES = [json.loads(p.read_text()) for p in CASE_FILES]
if not CASES and os.environ.get("HERMES_REALWORLD_REQUIRED"):  # CI: the corpus is beside it, so it must be read
    raise RuntimeError(f"HERMES_REALWORLD_REQUIRED is set but {CASE_DIR} holds no cases")
if not CASES:  # the recordings are public data we may not commit: each checkout builds its own copy
    pytest.skip(f"no real-world cases in {CASE_DIR}: build them with tests/realworld/extract.py from the "
                "public checkouts named in tests/realworld/SOURCES.md (or set HERMES_REALWORLD_CASES)",
                allow_module_level=True)

_PRIOR_CLAUDE = ("thinking of a turn before the latest user message is not sent: for this Claude model the "
                 "API drops earlier turns' thinking from context anyway (only the open tool loop's must go back)")
_THINK_IN_CONTENT = ("the client re-wrapped the reasoning as <think> text inside the visible content; Hermes never "
                     "moves reasoning into visible content (every later route would read it as the model's words)")
_GEMINI_PLACEHOLDER = (
    "gemini-2.0-flash returned calls without a thoughtSignature; Hermes adds Google's documented placeholder "
    "skip_thought_signature_validator as the plain string REST clients send (gemini-cli, rust-genai); the client "
    "sent none, or (pydantic-ai's structured output) the placeholder base64-encoded — accepted either way")
_OR_LOST_FRAGMENT = (
    "the client lost the first streamed reasoning fragment (\"The\") and sent only reasoning_details; Hermes sends "
    "the text as streamed, in the same reasoning_details entry and as reasoning_content / reasoning")
_OR_GROK = (
    "the client replaced the two entries OpenRouter returned for Grok (reasoning.summary and reasoning.encrypted) "
    "by one text entry; Hermes sends the entries as returned, encrypted data byte-identical")
DIFFERENCES: Mapping[str, str] = {
    # case id → why the remaining difference from the recorded client's request is harmless
    "anthropic/anthropic_model_thinking_part": _PRIOR_CLAUDE,
    "anthropic/anthropic_model_thinking_part_redacted": _PRIOR_CLAUDE,
    # Claude Sonnet 4.0 / 3.7 on Bedrock: the same model profile as on the direct API (docs/models.md)
    "bedrock/bedrock_model_thinking_part_anthropic": _PRIOR_CLAUDE,
    "bedrock/bedrock_model_thinking_part_redacted": _PRIOR_CLAUDE,
    "bedrock/bedrock_model_thinking_part_anthropic_legacy": _PRIOR_CLAUDE,
    "bedrock/bedrock_model_thinking_part_deepseek": (
        _THINK_IN_CONTENT + "; Bedrock's DeepSeek-R1 row sends no reasoning at all"),
    "bedrock/bedrock_thinking_high_qwen_variant": (
        _THINK_IN_CONTENT + "; the turn had no visible text, so Hermes sends the `(empty)` placeholder (Converse "
        "refuses an empty text block) and no earlier-turn reasoning"),
    "bedrock/bedrock_moonshotai_tool_call": (
        _THINK_IN_CONTENT + ". Hermes sends it as reasoningText without a signature (the row's rule for non-Claude "
        "models; no recording shows Bedrock taking that for Kimi, none refuses it) and maps the call id "
        "functions.get_temperature:0 to the pattern of the ToolUseBlock reference; this recording shows Bedrock "
        "accepted the raw id for Kimi, so the mapping is not needed there, and harmless (same id for call and result)"),
    "anthropic/AnthropicComputerUse_claude-sonnet-4_computer_use": (
        "the client dropped the text block before the tool_use; Hermes sends both, in the order returned"),
    "anthropic/AnthropicComputerUse_claude-sonnet-4_computer_use_streaming": "as for the computer_use case, streamed",
    "gemini/google_model_iter_stream": _GEMINI_PLACEHOLDER,
    "gemini/google_model_iter_stream@1": _GEMINI_PLACEHOLDER,
    "gemini/google_model_structured_output": _GEMINI_PLACEHOLDER,
    "gemini/google_tool_config_any_with_tool_without_args": _GEMINI_PLACEHOLDER,
    "gemini/google_tool_output": _GEMINI_PLACEHOLDER,
    "gemini/multiple_agent_tool_calls": _GEMINI_PLACEHOLDER,
    "groq/groq_model_thinking_part_iter": _THINK_IN_CONTENT + "; Groq's row sends no reasoning key",
    "groq/tool_use_failed_error@1": _THINK_IN_CONTENT + "; Groq's row sends no reasoning key",
    "groq/tool_use_failed_error_streaming@1": _THINK_IN_CONTENT + "; Groq's row sends no reasoning key",
    "huggingface/hf_model_thinking_part": (
        "no row for the Hugging Face router: the generic row keeps the content as sent, <think> block included, "
        "and sends it back byte-identical; the client split it and re-wrapped it with other newlines"),
    "kimi/OpenAICompatibleCommon_avian-kimi_multi_tool_streaming": (
        "the client sent one space where the model streamed a sentence before its calls; Hermes sends the text "
        "as streamed (reasoning_content and the calls are identical)"),
    "openrouter/OpenRouterCommon_glm_multi_tool_streaming": _OR_LOST_FRAGMENT,
    "openrouter/OpenRouterCommon_glm_tool_streaming": _OR_LOST_FRAGMENT,
    "openrouter/OpenRouterCommon_kimi_multi_tool_streaming": _OR_LOST_FRAGMENT,
    "openrouter/OpenRouterCommon_kimi_tool_streaming": _OR_LOST_FRAGMENT,
    "openrouter/OpenRouterCommon_grok_multi_tool": _OR_GROK,
    "openrouter/OpenRouterCommon_grok_multi_tool_streaming": _OR_GROK,
    "openrouter/OpenRouterCommon_grok_tool": _OR_GROK,
    "openrouter/OpenRouterCommon_grok_tool_streaming": _OR_GROK,
    "cerebras/cerebras_zai_reasoning_replayed_as_think_tags": (
        "the client re-wrapped an earlier turn's reasoning as <think> text in content; Hermes never moves "
        "reasoning into visible content (it would be read as the model's words on every later route)"),
    "gemini/google_model_thinking_part": (
        "the thought-summary part is not sent back: Gemini restores its thinking from the signature, which "
        "goes back byte-identical on the same text part"),
    "groq/groq_model_thinking_part": (
        "visible text after </think> is sent without its leading blank lines (the think-tag split drops "
        "them); the client kept them. Whitespace only; Groq's row sends no reasoning key"),
    "openai-responses/openai_responses_phase_streamed_on_part_start": (
        "the recorded request's message text has straight quotes where the stream (deltas and done "
        "events alike) has curly ones: an artefact of the recording; Hermes sends what was streamed"),
    "openai-responses/openai_responses_stream": (
        "the client sent the function_call item id (fc_…) as call_id; Hermes sends the call_id the "
        "provider returned. Either pairs the call with its output, which is all the API checks"),
    "kimi/OpenAICompatibleThinking_avian-kimi_thinking-streaming": (
        "the model's visible content was three spaces; the client sent one. Hermes sends what the model "
        "produced; whitespace-only content carries nothing"),
    "llamacpp/OpenAICompatibleThinking_llama-cpp-gpt-oss_thinking": (
        "Hermes sends the text as reasoning_content and reasoning (llama.cpp reads the first, vLLM and "
        "Ollama the second, and each ignores the other); the client sent only reasoning_content"),
    "llamacpp/OpenAICompatibleThinking_llama-cpp-gpt-oss_thinking-streaming": (
        "as above: reasoning_content and reasoning with the same text, where the client sent one"),
    "vercel/VercelThinking_gpt-5_thinking": (
        "the client dropped the `id` from the reasoning.summary entry and sent only reasoning_details; "
        "Hermes sends both entries exactly as returned (id included, encrypted data byte-identical) and "
        "the readable text also as reasoning_content / reasoning"),
    "vercel/VercelThinking_gpt-5_thinking-streaming": "as for vercel/gpt-5_thinking, streamed",
    "vercel/VercelThinking_gemini-3-pro-preview_thinking": (
        "the whole response carried only a reasoning.text entry; the client invented an empty "
        "reasoning.encrypted entry (no data) to go with it. Hermes sends the entry as returned"),
    "vercel/VercelThinking_gemini-3-pro-preview_thinking-streaming": (
        "the client sent only the reasoning.encrypted entry (signature byte-identical to ours) and dropped "
        "the reasoning.text entry that shares its index 0; Hermes sends both as returned"),
}


def explain(family: str, got: list[tuple[Any, ...]], want: list[tuple[Any, ...]]) -> str | None:
    """Why a difference is harmless, for the kinds that recur across cases — checked exactly, so
    anything else in the turn still has to match."""
    if family not in ("openai-responses", "anthropic", "bedrock", "gemini") and len(got) == len(want) == 3 \
            and got[0] == want[0] and got[2] == want[2]:
        ours, theirs = dict(got[1][1]), dict(want[1][1])
        extra = set(ours) - set(theirs)
        if all(ours[k] == v for k, v in theirs.items()) and extra <= {"reasoning_content", "reasoning"}:
            texts = {ours[k] for k in extra} | {theirs[k] for k in ("reasoning", "reasoning_content") if k in theirs}
            details = json.loads(ours.get("reasoning_details", "[]"))
            readable = "".join(d.get("text") or d.get("summary") or "" for d in details)
            if len(texts) == 1 and (len(texts | {v for k, v in theirs.items() if k != "reasoning_details"}) == 1
                                    or json.loads(next(iter(texts))) == readable):
                return ("the row also sends the readable text as reasoning_content / reasoning (the gateways take "
                        "both, local servers read one and ignore the other); reasoning_details, which the upstream "
                        "verifies, is byte-identical")
    if family == "openai-responses" and ("message", "") in want \
            and [w for w in want if w != ("message", "")] == [g for g in got if g != ("message", "")]:
        return ("the client sent an empty assistant message before the function calls; Hermes sends no empty "
                "message (nothing to carry), the rest is identical")
    if family == "openai-responses" and any(g[0] == "reasoning" for g in got) \
            and [g for g in got if g[0] != "reasoning"] == want:
        return ("the client dropped the reasoning items (the API allows that, the model then loses its "
                "reasoning); Hermes sends the items the provider returned, id and encrypted_content "
                "byte-identical, which the API accepts (the pydantic-ai cases show it)")
    return None


def target(case: Mapping[str, Any]) -> Resolved:
    """The row the recording's provider has, pointed at the host it was recorded from."""
    return resolve(case["route"], f"https://{case['host']}/v1", case["model"])


def shape(case: Mapping[str, Any]) -> str:
    """Which of the five wire shapes the case was recorded in (several families share one)."""
    return _SHAPES[target(case).route.wire]


_SHAPES = {"anthropic": "anthropic", "bedrock": "bedrock", "openai_responses": "openai-responses",
           "gemini": "gemini", "openai_chat": "chat"}


def decode(case: Mapping[str, Any], r: Resolved) -> Response:
    """The recorded response through the same decoder the call path would pick."""
    wire = get_wire(r.route.wire)
    acc = Accumulator(r.key)
    dec = wire.decoder(r) if hasattr(wire, "decoder") else wire
    if "response" in case:
        acc.feed_all(dec.from_wire(case["response"]))
    else:
        event = (dec.decode_event if dec is not wire
                 else wire.new_decoder() if hasattr(wire, "new_decoder") else wire.decode_event)
        for name, data in iter_sse(iter(case["sse"].splitlines())):
            acc.feed_all(event(name, data))
    return acc.result()


# ----------------------------------------------------------------------------- what was returned


def _sse_objects(text: str) -> list[Any]:
    out = []
    for _, data in iter_sse(iter(text.splitlines())):
        if data != "[DONE]":
            out.append(json.loads(data))
    return out


def returned_items(case: Mapping[str, Any]) -> list[tuple[str, Any]]:
    """The reasoning items the provider returned, read straight from the recording."""
    fam, resp = shape(case), case.get("response")
    items: list[tuple[str, Any]] = []
    if fam == "anthropic" and resp is None:
        items += _anthropic_stream(case["sse"])
    elif fam == "anthropic":
        for b in resp["content"]:
            if b["type"] == "thinking":
                items.append(("anthropic.signature", (b["thinking"], b["signature"])))
            elif b["type"] == "redacted_thinking":
                items.append(("anthropic.redacted", ("", b["data"])))
    elif fam == "bedrock":
        for b in resp["output"]["message"]["content"]:
            rc = b.get("reasoningContent")
            if rc and "reasoningText" in rc and rc["reasoningText"].get("signature") is None:
                items.append(("text", rc["reasoningText"]["text"]))  # unsigned: DeepSeek, Qwen, Kimi on Bedrock
            elif rc and "reasoningText" in rc:
                items.append(("anthropic.signature", (rc["reasoningText"]["text"], rc["reasoningText"]["signature"])))
            elif rc:
                items.append(("anthropic.redacted", ("", rc["redactedContent"])))
    elif fam == "openai-responses":
        # streamed: each item as ``output_item.done`` closed it (the stream repeats encrypted_content
        # as different tokens in added / done / completed; done is the one the client sent back)
        output = resp["output"] if resp else [
            o["item"] for o in _sse_objects(case["sse"]) if o.get("type") == "response.output_item.done"]
        for it in output:
            if it["type"] == "reasoning":
                items.append(("openai.reasoning", (it["id"], it.get("encrypted_content"),
                                                   [s["text"] for s in it.get("summary") or []])))
    elif fam == "gemini":
        chunks = [resp] if resp else _sse_objects(case["sse"])
        for ch in chunks:
            for part in ((ch.get("candidates") or [{}])[0].get("content") or {}).get("parts") or []:
                if part.get("thoughtSignature"):
                    items.append(("gemini.signature", part["thoughtSignature"]))
                if part.get("thought") and part.get("text"):
                    items.append(("gemini.thought", part["text"]))
    else:  # chat completions
        msg = resp["choices"][0]["message"] if resp else _chat_stream(case["sse"])
        for key in ("reasoning_content", "reasoning"):
            if msg.get(key):
                items.append(("chat.text", msg[key]))
                break
        if msg.get("reasoning_details"):
            items.append(("chat.details", msg["reasoning_details"]))
        content = msg.get("content")
        if isinstance(content, str) and content.lstrip().startswith("<think>"):
            items.append(("chat.think", content.lstrip()[7:].split("</think>")[0]))
    return items


def _anthropic_stream(text: str) -> list[tuple[str, Any]]:
    """Thinking blocks as the SDK's accumulator builds them: text deltas join, the signature is set."""
    blocks: dict[int, dict[str, Any]] = {}
    for ev in _sse_objects(text):
        if ev.get("type") == "content_block_start":
            blocks[ev["index"]] = dict(ev["content_block"])
        elif ev.get("type") == "content_block_delta":
            b, d = blocks[ev["index"]], ev["delta"]
            if d["type"] == "thinking_delta":
                b["thinking"] += d["thinking"]
            elif d["type"] == "signature_delta":
                b["signature"] = d["signature"]
    return [("anthropic.signature", (b["thinking"], b["signature"])) if b["type"] == "thinking"
            else ("anthropic.redacted", ("", b["data"]))
            for _, b in sorted(blocks.items()) if b["type"] in ("thinking", "redacted_thinking")]


def _chat_stream(text: str) -> dict[str, Any]:
    """The message a chat stream adds up to: text fields join; ``reasoning_details`` fragments
    join within one (index, type), other keys keep the latest non-empty value."""
    msg: dict[str, Any] = {}
    details: dict[tuple[Any, Any], dict[str, Any]] = {}
    for chunk in _sse_objects(text):
        for choice in chunk.get("choices") or []:
            delta = choice.get("delta") or {}
            for key in ("reasoning_content", "reasoning", "content"):
                if isinstance(delta.get(key), str):
                    msg[key] = msg.get(key, "") + delta[key]
            for frag in delta.get("reasoning_details") or []:
                cur = details.setdefault((frag.get("index"), frag.get("type")), {})
                for k, v in frag.items():
                    if k in ("text", "summary") and isinstance(v, str):
                        cur[k] = cur.get(k, "") + v
                    elif v not in (None, "") or k not in cur:
                        cur[k] = v
    if details:
        msg["reasoning_details"] = list(details.values())
    return msg


def stored_holds(items: list[tuple[str, Any]], turn: Message, *, think_tags: bool = True) -> list[str]:
    """What of the returned items the stored turn does not hold exactly (empty: all of it).
    On a row that does not split ``<think>`` tags the content is kept as sent, tags and all."""
    parts = [p for p in turn.parts if isinstance(p, Reasoning)]
    visible = "".join(p.text for p in turn.parts if isinstance(p, Text))
    blobs = [(p.blob_kind, p.text, p.blob) for p in parts if p.blob is not None]
    natives = [v for p in parts if p.native for v in (p.native.thought_signature,
                                                      *(s for _, s in p.native.tool_signatures)) if v]
    texts = "\n".join(p.text for p in parts)
    missing = []
    for kind, value in items:
        if kind in ("anthropic.signature", "anthropic.redacted"):
            text, blob = value
            if (kind, text, blob) not in blobs:
                missing.append(f"{kind} {str(blob)[:16]}…")
        elif kind == "openai.reasoning":
            item_id, enc, summary = value
            hit = [p for p in parts if p.item_id == item_id]
            kept = (list(hit[0].extra.get("openai.summary") or [hit[0].text] if hit[0].text else [])
                    if hit else None)
            if not hit or (enc and hit[0].blob != enc) or kept != summary:
                missing.append(f"reasoning item {item_id} (id, encrypted_content, summary parts)")
        elif kind == "gemini.signature":
            if value not in natives:
                missing.append(f"thoughtSignature {value[:16]}…")
        elif kind == "chat.details":
            if not any(p.blob == orjson.dumps(value).decode() for p in parts):
                missing.append("reasoning_details (entries, keys, bytes)")
        elif kind == "chat.think" and not think_tags:
            if f"<think>{value}</think>" not in visible:
                missing.append("content with its <think> block, as sent")
        elif value not in texts:  # chat.text, chat.think, gemini.thought, unsigned Bedrock text
            missing.append(f"{kind} text")
    # and nothing was invented: as many signed/encrypted items stored as returned
    signed = sum(1 for k, _ in items if k in ("anthropic.signature", "anthropic.redacted"))
    if signed and len(blobs) != signed:
        missing.append(f"{len(blobs)} blobs stored for {signed} returned")
    return missing


# ----------------------------------------------------------------------------- the next request


def _b64(s: str | bytes) -> bytes:
    """Signature bytes, whatever the alphabet (Gemini returns standard base64, some clients send
    it back URL-safe; Bedrock's SDK takes raw bytes)."""
    if isinstance(s, bytes):
        return s
    return base64.b64decode(s.replace("-", "+").replace("_", "/") + "=" * (-len(s) % 4))


def _json(v: Any) -> str:
    return json.dumps(json.loads(v) if isinstance(v, str) else v, sort_keys=True)


def assistant_turn(family: str, conversation: Sequence[Mapping[str, Any]],
                   call_id: str | None = None) -> list[tuple[Any, ...]]:
    """The assistant turn that answered the recorded request, as (block kind, what matters):
    carriers, signature bytes, block order — in any of the five wire shapes. On the chat wire
    the turn is the one holding ``call_id`` when given (a client may add turns of its own)."""
    if family == "openai-responses":
        users = [i for i, it in enumerate(conversation) if it.get("role") == "user"]
        after = [it for it in conversation[users[-1] + 1:] if it.get("type") != "function_call_output"]
        turn = after or conversation[users[-2] + 1:users[-1]]
        out: list[tuple[Any, ...]] = []
        for it in turn:
            kind = it.get("type") or "message"
            if kind == "reasoning":
                out.append(("reasoning", it.get("id"), it.get("encrypted_content"),
                            tuple(s["text"] for s in it.get("summary") or [])))
            elif kind == "function_call":
                out.append(("function_call", it["call_id"], it["name"], _json(it["arguments"])))
            elif kind == "message":
                content = it["content"]
                text = content if isinstance(content, str) else "".join(c.get("text", "") for c in content)
                out.append(("message", text))
        return out
    role = "model" if family == "gemini" else "assistant"
    turns = [m for m in conversation if m.get("role") == role]
    last = next((m for m in turns if call_id is not None and call_id in _call_ids(m)), turns[-1])
    if family == "gemini":
        parts = [{_CAMEL.get(k, k): v for k, v in p.items()} for p in last["parts"]]  # Vertex takes snake_case too
        return [("thought" if p.get("thought") else "text" if "text" in p else "functionCall",
                 p.get("text") if "text" in p else (p["functionCall"]["name"], _json(p["functionCall"].get("args", {}))),
                 _b64(p["thoughtSignature"]) if p.get("thoughtSignature") else None)
                for p in parts]
    if family == "anthropic":
        out = []
        for b in last["content"] if isinstance(last["content"], list) else [{"type": "text", "text": last["content"]}]:
            t = b["type"]
            out.append((t, b.get("thinking"), b.get("signature")) if t == "thinking"
                       else (t, b["data"]) if t == "redacted_thinking"
                       else (t, b["id"], b["name"], _json(b["input"])) if t == "tool_use"
                       else (t, b.get("text")))
        return out
    if family == "bedrock":
        out = []
        for b in last["content"]:
            if "reasoningContent" in b:
                rc = b["reasoningContent"]
                out.append(("reasoningText", rc["reasoningText"]["text"], rc["reasoningText"].get("signature"))
                           if "reasoningText" in rc else ("redactedContent", _b64(rc["redactedContent"])))
            elif "toolUse" in b:
                out.append(("toolUse", b["toolUse"]["toolUseId"], b["toolUse"]["name"], _json(b["toolUse"]["input"])))
            else:
                out.append(("text", b.get("text")))
        return out
    carriers = tuple((k, json.dumps(last[k], sort_keys=True)) for k in ("reasoning_content", "reasoning",
                                                                         "reasoning_details") if last.get(k))
    calls = tuple((c["id"], c["function"]["name"], _json(c["function"]["arguments"])) for c in last.get("tool_calls") or [])
    return [("content", last.get("content") or ""), ("carriers", carriers), ("tool_calls", calls)]


_CAMEL = {"function_call": "functionCall", "thought_signature": "thoughtSignature"}


def _call_ids(message: Mapping[str, Any]) -> set[str]:
    """The tool-call ids an assistant message holds, in the chat, Anthropic or Bedrock shape."""
    ids = {c.get("id") for c in message.get("tool_calls") or []}
    for b in message.get("content") if isinstance(message.get("content"), list) else []:
        ids |= {b.get("id")} if b.get("type") == "tool_use" else {(b.get("toolUse") or {}).get("toolUseId")}
    return {i for i in ids if i}


def first_user_text(family: str, conversation: Sequence[Mapping[str, Any]]) -> str:
    m = next(m for m in conversation if m.get("role") == "user")
    if family == "gemini":
        return "".join(p.get("text", "") for p in m["parts"])
    c = m.get("content")
    return c if isinstance(c, str) else "".join(b.get("text", "") for b in c if isinstance(b, Mapping))


def our_next_request(case: Mapping[str, Any], r: Resolved, turn: Message) -> dict[str, Any]:
    """Our request after the stored turn: its tool results (the loop goes on) or a new question."""
    conv = next(iter(case["next_request"].values()))
    tail = (Message("tool", tuple(ToolResult(c.id, "recorded result", c.name) for c in turn.tool_calls))
            if turn.tool_calls else Message.user("And then?"))
    history = [Message.user(first_user_text(shape(case), conv)), turn, tail]
    plan = plan_replay(history, r, settings=Settings(thinking=True))
    return get_wire(r.route.wire).to_wire(plan, tools=(), settings=Settings(thinking=True), stream=False)


# ----------------------------------------------------------------------------- the tests


def test_corpus_covers_the_provider_families() -> None:
    per = Counter(c["family"] for c in CASES)
    print("real-world corpus:", dict(sorted(per.items())), f"({len(CASES)} cases)")
    assert len(CASES) >= 25 and len(per) >= 8
    assert all(c["source"]["licence"] in ("MIT", "Apache-2.0") and c["source"]["path"] for c in CASES)
    assert set(DIFFERENCES) <= {c["id"] for c in CASES}, "a listed difference names no case"


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_recorded_response_is_stored_exactly(case: dict[str, Any]) -> None:
    r = target(case)
    turn = decode(case, r).message
    items = returned_items(case)
    assert items or turn.tool_calls, "the case has reasoning and/or tool calls"
    assert not stored_holds(items, turn, think_tags=r.route.think_tags)


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_next_request_carries_the_turn_as_the_real_client_did(case: dict[str, Any]) -> None:
    r = target(case)
    turn = decode(case, r).message
    ours = our_next_request(case, r, turn)
    recorded_conv = next(iter(case["next_request"].values()))
    key = {"openai-responses": "input", "gemini": "contents"}.get(shape(case), "messages")
    call_id = turn.tool_calls[0].id if turn.tool_calls else None
    want = assistant_turn(shape(case), recorded_conv, call_id)
    got = assistant_turn(shape(case), ours[key], call_id)
    if case["id"] in DIFFERENCES:
        assert got != want, f"{case['id']}: the listed difference is gone; remove it from DIFFERENCES"
    elif got != want:
        assert explain(shape(case), got, want), f"{case['id']}: unexplained difference"
