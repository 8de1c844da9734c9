"""The emulators with every answer kept as sent, and what a chat route's answers carried.

The real-client tests check that each tool-call turn goes back to the route with exactly the
reasoning the route returned for it. "Exactly" needs the route's own answers, not what the proxy
made of them: ``Recording`` keeps every answer body byte for byte, and ``chat_turns`` folds them
here — independently of the proxy's own stream fold — into the carriers of each tool call the
route made (the text fields, OpenRouter's ``reasoning_details``, Gemini's thought signatures),
keyed by the call's id, which the route gets back unchanged.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import orjson

from hermes.emulate import Emulator

__all__ = ["TEXT_KEYS", "Recording", "carriers_of", "chat_turns", "message_turns", "refusals"]

TEXT_KEYS = ("reasoning_content", "reasoning")
"""The chat wire's readable reasoning fields (DeepSeek, Kimi, GLM, Gemini: the first; OpenRouter: the second)."""


class Recording(Emulator):
    """The emulators, with every answer body kept as sent (``answers``: path, body)."""

    def __init__(self) -> None:
        super().__init__()
        self.answers: list[tuple[str, bytes]] = []

    def __enter__(self) -> Recording:
        self.start()
        return self

    def app(self) -> Any:
        inner = super().app()

        async def app(scope: Any, receive: Any, send: Any) -> None:
            chunks: list[bytes] = []

            async def keep(message: Any) -> None:
                if message["type"] == "http.response.body":
                    chunks.append(message.get("body", b""))
                    if not message.get("more_body"):
                        self.answers.append((scope.get("path", ""), b"".join(chunks)))
                await send(message)

            await inner(scope, receive, keep)

        return app


def _sig(call: dict[str, Any]) -> Any:
    return ((call.get("extra_content") or {}).get("google") or {}).get("thought_signature")


def carriers_of(message: dict[str, Any]) -> dict[str, Any]:
    """A chat assistant message's reasoning carriers (absent ones left out): its readable text —
    one value however many text fields carry it (OpenRouter's row sends it in both; two values
    that differ stay a list, which equals no answer's) — ``reasoning_details``, and each tool
    call's thought signature."""
    texts = sorted({message[k] for k in TEXT_KEYS if message.get(k)})
    out: dict[str, Any] = {"text": texts[0] if len(texts) == 1 else texts} if texts else {}
    if message.get("reasoning_details"):
        out["reasoning_details"] = message["reasoning_details"]
    sigs = [_sig(c) for c in message.get("tool_calls") or []]
    if any(sigs):
        out["signatures"] = sigs
    return out


def _fold_details(pieces: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """Streamed ``reasoning_details`` fragments as the whole entries (one per type and index):
    text and summary concatenated, a signature or data from the fragment that has one."""
    whole: dict[tuple[str, int], dict[str, Any]] = {}
    for p in pieces:
        d = whole.setdefault((p["type"], p.get("index", 0)), {})
        for k, v in p.items():
            if k in ("text", "summary") and k in d:
                d[k] += v
            elif k not in d or (k in ("signature", "data") and v):
                d[k] = v
    return list(whole.values())


def _folded(raw: bytes) -> dict[str, Any] | None:
    """The assistant message of one chat answer, JSON or SSE (None: not a chat answer)."""
    if raw.lstrip().startswith(b"{"):
        try:
            data = orjson.loads(raw)
        except orjson.JSONDecodeError:
            return None
        choices = data.get("choices") if isinstance(data, dict) else None
        return dict(choices[0]["message"]) if choices else None
    msg: dict[str, Any] = {}
    details: list[dict[str, Any]] = []
    calls: dict[int, dict[str, Any]] = {}
    for line in raw.decode("utf-8", "replace").splitlines():
        if not line.startswith("data: ") or line == "data: [DONE]":
            continue
        for choice in orjson.loads(line[6:]).get("choices") or []:
            delta = choice.get("delta") or {}
            for k in TEXT_KEYS:
                if delta.get(k):
                    msg[k] = msg.get(k, "") + delta[k]
            details += delta.get("reasoning_details") or []
            for tc in delta.get("tool_calls") or []:
                c = calls.setdefault(tc["index"], {})
                for k, v in tc.items():
                    if k == "function":
                        f = c.setdefault("function", {"name": "", "arguments": ""})
                        f["name"] = v.get("name") or f["name"]
                        f["arguments"] += v.get("arguments") or ""
                    elif k != "index":
                        c[k] = v
    if details:
        msg["reasoning_details"] = _fold_details(details)
    if calls:
        msg["tool_calls"] = [calls[i] for i in sorted(calls)]
    return msg


def chat_turns(emu: Recording, route: str, since: int = 0) -> dict[str, dict[str, Any]]:
    """Each tool call the route answered on ``/<route>/v1/chat/completions`` (answers from
    index ``since`` on): call id → the carriers of the turn that made it."""
    out: dict[str, dict[str, Any]] = {}
    for at, raw in emu.answers[since:]:
        if at != f"/{route}/v1/chat/completions":
            continue
        msg = _folded(raw)
        for call in (msg or {}).get("tool_calls") or []:
            out[call["id"]] = carriers_of(msg or {})
    return out


def _message(raw: bytes) -> dict[str, Any] | None:
    """One Messages answer's content blocks, JSON or SSE (None: not a Messages answer)."""
    if raw.lstrip().startswith(b"{"):
        try:
            data = orjson.loads(raw)
        except orjson.JSONDecodeError:
            return None
        return data if isinstance(data, dict) and data.get("type") == "message" else None
    blocks: dict[int, dict[str, Any]] = {}
    partial: dict[int, str] = {}
    for line in raw.decode("utf-8", "replace").splitlines():
        if not line.startswith("data: "):
            continue
        ev = orjson.loads(line[6:])
        kind, i = ev.get("type"), ev.get("index")
        if kind == "content_block_start":
            blocks[i] = dict(ev["content_block"])
        elif kind == "content_block_delta" and i in blocks:
            d = ev["delta"]
            if d["type"] == "thinking_delta":
                blocks[i]["thinking"] += d["thinking"]
            elif d["type"] == "signature_delta":
                blocks[i]["signature"] = d["signature"]
            elif d["type"] == "text_delta":
                blocks[i]["text"] += d["text"]
            elif d["type"] == "input_json_delta":
                partial[i] = partial.get(i, "") + d["partial_json"]
    for i, text in partial.items():
        blocks[i]["input"] = orjson.loads(text) if text else {}
    return {"type": "message", "content": [blocks[i] for i in sorted(blocks)]} if blocks else None


def message_turns(emu: Recording, route: str, since: int = 0) -> dict[str, list[dict[str, Any]]]:
    """Each tool call the route answered on ``/<route>/v1/messages`` (answers from index ``since``
    on): ``tool_use`` id → the thinking blocks of the answer that made it, as sent."""
    out: dict[str, list[dict[str, Any]]] = {}
    for at, raw in emu.answers[since:]:
        if at != f"/{route}/v1/messages":
            continue
        blocks = (_message(raw) or {}).get("content") or []
        thinking = [b for b in blocks if b.get("type") in ("thinking", "redacted_thinking")]
        for b in blocks:
            if b.get("type") == "tool_use":
                out[b["id"]] = thinking
    return out


def refusals(emu: Recording, route: str, since: int = 0) -> list[bytes]:
    """The error answers the route gave (answers from index ``since`` on): every request
    accepted is none. An answer to a request the route serves is a stream or a JSON object
    without ``error`` (Anthropic's errors are ``{"type": "error", ...}``)."""
    out = []
    for at, raw in emu.answers[since:]:
        if not at.startswith(f"/{route}/") or not raw.lstrip().startswith(b"{"):
            continue
        try:
            data = orjson.loads(raw)
        except orjson.JSONDecodeError:
            out.append(raw)
            continue
        if not isinstance(data, dict) or "error" in data or data.get("type") == "error":
            out.append(raw)
    return out
