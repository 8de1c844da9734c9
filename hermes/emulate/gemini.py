"""Gemini emulator: AI Studio (``gemini``) and Vertex AI (``gemini-vertex``) personalities.

Plays the scripted model (``script.next_step``) behind the real URL shapes and the real
checks a replaying client trips over:

* strict proto-JSON: any unknown name → 400 ``Invalid JSON payload received. Unknown name …``;
* Gemini 3 thought signatures: in the current turn (the model contents after the last user
  content with ordinary parts) the first ``functionCall`` of every step must carry a
  ``thoughtSignature`` that verifies, or the documented ``skip_thought_signature_validator``;
  a tampered or foreign signature anywhere → 400 ``Corrupted thought signature.``. Signatures
  minted for another model family verify but are ignored (the documented behaviour), except by
  Gemma, which reads none of Gemini's: 400 ``Request contains an invalid argument.`` (hermes-agent
  issue 36907, a gemini-3-flash signature replayed to gemma-4-31b-it);
* function response count must match the calling turn.

The model chains up to two tools per user turn (tool 1, then tool 2, then the answer) so a
loop has several steps whose signatures must all come back. Only the first call of a step is
signed, as Gemini does for parallel calls. Answers carry a signature on their last part; in a
stream it arrives in a trailing chunk with an empty text part, as the real service sends it.

Faults (``state.take_fault``): ``500``, ``429``, ``truncate``, ``malformed``, ``slow``,
``safety`` (finishReason SAFETY), ``noparts`` (a candidate with no parts), ``html502``,
``empty200``, ``text4xx``.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import hashlib
import re
from collections.abc import AsyncIterator, Mapping, Sequence
from fnmatch import fnmatchcase
from typing import Any

import orjson
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from ._gemini_schema import camel, unknown_fields
from .access import refusal
from .core import EmulatorState, Personality, register, transport_fault
from .script import Step, next_step

__all__ = ["SKIP", "family", "mint_call", "mint_text"]

SKIP = "skip_thought_signature_validator"
_DUMMIES = frozenset({SKIP, "context_engineering_is_the_way_to_go"})
_PREFIX = "EuYC"
"""Four base64 characters, so a signature stays valid base64 (the SDK decodes it to bytes)."""
_DOCS = "https://ai.google.dev/gemini-api/docs/thought-signatures"
_PATH = re.compile(r"^(?P<prefix>.*?)/models/(?P<model>[^/:]+):(?P<method>generateContent|streamGenerateContent)$")


def family(model: str) -> str:
    """Model family a signature is valid for: ``gemini-3-pro-preview`` → ``gemini-3-pro``."""
    return re.sub(r"-(preview|exp|latest|\d{2}-\d{2,4}|\d{3})\b.*$", "", model.lower())


def mint_call(state: EmulatorState, name: str, fam: str, fc: Mapping[str, Any]) -> str:
    args = orjson.dumps(fc.get("args") or {}, option=orjson.OPT_SORT_KEYS).decode()
    return state.mint(name, fam, f"fc\0{fc.get('name')}\0{args}", prefix=_PREFIX)


def mint_text(state: EmulatorState, name: str, fam: str, text: str) -> str:
    return state.mint(name, fam, f"text\0{text}", prefix=_PREFIX)


def _sig_bytes(sig: str) -> bytes | None:
    """Proto ``bytes`` in JSON: standard or URL-safe base64, padding optional (the SDK sends URL-safe)."""
    try:
        return base64.b64decode(sig.replace("-", "+").replace("_", "/") + "=" * (-len(sig) % 4), validate=True)
    except (ValueError, binascii.Error):
        return None


def _error(code: int, status: str, message: str, details: list[Any] | None = None) -> JSONResponse:
    err: dict[str, Any] = {"code": code, "message": message, "status": status}
    if details:
        err["details"] = details
    return JSONResponse({"error": err}, status_code=code)


LEVELS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("gemini-3-pro*", ("low", "high")),
    ("gemini-3.1-pro*", ("low", "medium", "high")),
    ("gemini-3.7-flash*", ("low", "medium", "high")),
)
"""(model glob, the ``thinkingLevel`` values it takes), first match wins; the refusal's words are
quoted in chatwise issue 1206 (``Thinking level MEDIUM is not supported for this model``)."""


def levels_of(model: str) -> tuple[str, ...]:
    """The thinking levels ``model`` takes (empty: any)."""
    m = model.lower()
    return next((values for glob, values in LEVELS if fnmatchcase(m, glob)), ())


def _invalid(message: str) -> JSONResponse:
    return _error(400, "INVALID_ARGUMENT", message)


def _unknown(found: Sequence[tuple[str, str]]) -> JSONResponse:
    texts = [f"Invalid JSON payload received. Unknown name \"{n}\"{f' at {p!r}' if p else ''}: Cannot find field."
             for n, p in found]
    violations = [{"field": p, "description": t} for (_, p), t in zip(found, texts, strict=True)]
    return _error(400, "INVALID_ARGUMENT", "\n".join(texts),
                  [{"@type": "type.googleapis.com/google.rpc.BadRequest", "fieldViolations": violations}])


def _parts(content: Any) -> list[Mapping[str, Any]]:
    parts = content.get("parts") if isinstance(content, Mapping) else None
    return [p for p in parts if isinstance(p, Mapping)] if isinstance(parts, list) else []


def _fc(part: Mapping[str, Any]) -> Mapping[str, Any] | None:
    fc = part.get("functionCall", part.get("function_call"))
    return fc if isinstance(fc, Mapping) else None


def _sig(part: Mapping[str, Any]) -> Any:
    return part.get("thoughtSignature", part.get("thought_signature"))


def _is_standard_user(content: Mapping[str, Any]) -> bool:
    return content.get("role", "user") == "user" and any(
        "functionResponse" not in p and "function_response" not in p for p in _parts(content))


class _Checker:
    """The request checks a Gemini front end runs before the model sees anything."""

    def __init__(self, state: EmulatorState, name: str, model: str, families: set[str]) -> None:
        self.state, self.name, self.model = state, name, model
        self.fam = family(model)
        self.families = families

    def _minted_for(self, part: Mapping[str, Any], content: Mapping[str, Any]) -> str | None:
        """The model family the part's signature was minted for (this one's for a dummy); None
        when it verifies for none."""
        sig = _sig(part)
        if sig in _DUMMIES:
            return self.fam
        if not isinstance(sig, str):
            return None
        got = _sig_bytes(sig)
        if got is None:
            return None
        fc = _fc(part)
        text = "".join(p.get("text", "") for p in _parts(content) if not p.get("thought") and isinstance(p.get("text"), str))
        for fam in (self.fam, *sorted(self.families - {self.fam})):  # other families: accepted, ignored
            want = mint_call(self.state, self.name, fam, fc) if fc is not None else mint_text(self.state, self.name, fam, text)
            if _sig_bytes(want) == got:
                return fam
        return None

    def check(self, body: Mapping[str, Any]) -> JSONResponse | None:
        contents = body.get("contents")
        if not isinstance(contents, list) or not contents:
            return _invalid("* GenerateContentRequest.contents: contents is not specified\n")
        for i, c in enumerate(contents):
            if not isinstance(c, Mapping):
                return _invalid(f"Invalid value at 'contents[{i}]': expected an object")
            if c.get("role", "user") not in ("user", "model"):
                return _invalid("Please use a valid role: user, model.")
            if not _parts(c):
                return _invalid(f"* GenerateContentRequest.contents[{i}].parts: contents.parts must not be empty.\n")
        gc = body.get("generationConfig") or body.get("generation_config") or {}
        tc = gc.get("thinkingConfig") or gc.get("thinking_config") or {}
        keys = {camel(k) for k in tc} if isinstance(tc, Mapping) else set()
        if {"thinkingLevel", "thinkingBudget"} <= keys:
            return _invalid("You can only set only one of thinking budget and thinking level.")
        level = next((v for k, v in tc.items() if camel(k) == "thinkingLevel"), None) if keys else None
        allowed = levels_of(self.model)
        if isinstance(level, str) and allowed and level.lower() not in allowed:
            return _invalid(f"Thinking level {level.upper()} is not supported for this model.")
        for i, c in enumerate(contents[:-1]):
            calls = sum(1 for p in _parts(c) if _fc(p) is not None)
            nxt = contents[i + 1]
            answers = sum(1 for p in _parts(nxt) if "functionResponse" in p or "function_response" in p)
            if c.get("role") == "model" and calls and answers != calls:
                return _invalid("Please ensure that the number of function response parts is equal to the number of "
                                "function call parts of the function call turn.")
        for c in contents:
            for p in _parts(c):
                if _sig(p) is None:
                    continue
                fam = self._minted_for(p, c)
                if fam is None:
                    return _invalid("Corrupted thought signature.")
                if fam != self.fam and self.fam.startswith("gemma-"):
                    return _invalid("Request contains an invalid argument.")
        if not self.model.lower().startswith("gemini-3") or "image" in self.model.lower():
            return None
        last_user = max((i for i, c in enumerate(contents) if _is_standard_user(c)), default=-1)
        for i in range(last_user + 1, len(contents)):
            c = contents[i]
            if c.get("role") != "model":
                continue
            first = next((p for p in _parts(c) if _fc(p) is not None), None)
            if first is not None and not _sig(first):
                fc = _fc(first) or {}
                return _invalid(
                    "Function call is missing a thought_signature in functionCall parts. This is required for "
                    "tools to work correctly, and missing thought_signature may lead to degraded model "
                    f"performance. Additional data, function call `default_api:{fc.get('name')}` , position {i}. "
                    f"Please refer to {_DOCS} for more details.")
        return None


def _turn(body: Mapping[str, Any]) -> tuple[str, int]:
    """(text of the last ordinary user content, function responses since it)."""
    contents = [c for c in body.get("contents", []) if isinstance(c, Mapping)]
    last = max((i for i, c in enumerate(contents) if _is_standard_user(c)), default=-1)
    text = "".join(p.get("text", "") for p in _parts(contents[last]) if isinstance(p.get("text"), str)) if last >= 0 else ""
    results = sum(1 for c in contents[last + 1:] for p in _parts(c) if "functionResponse" in p or "function_response" in p)
    return text, results


def _tools(body: Mapping[str, Any]) -> list[tuple[str, Mapping[str, Any] | None]]:
    out: list[tuple[str, Mapping[str, Any] | None]] = []
    for tool in body.get("tools") or []:
        for fd in (tool or {}).get("functionDeclarations") or (tool or {}).get("function_declarations") or []:
            schema = fd.get("parametersJsonSchema") or fd.get("parameters_json_schema") or fd.get("parameters")
            out.append((fd.get("name", ""), schema))
    return out


def _step(body: Mapping[str, Any], model: str) -> tuple[Step, int]:
    text, results = _turn(body)
    tools = _tools(body)
    if tools and results < min(len(tools), 2):
        step = next_step(user_text=text, tools=[tools[results]], tool_results_since_user=0, model=model)
        return Step("tool", f"{step.reasoning} (step {results + 1})", step.tool, step.args), results
    return next_step(user_text=text, tools=tools, tool_results_since_user=max(results, 1) if tools else 0,
                     model=model), results


def _responses(state: EmulatorState, name: str, model: str, body: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The answer as a list of chunks; the non-streaming answer is their parts merged."""
    step, results = _step(body, model)
    fam = family(model)
    gc = body.get("generationConfig") or body.get("generation_config") or {}
    tc = gc.get("thinkingConfig") or gc.get("thinking_config") or {}
    thoughts = bool(tc.get("includeThoughts", tc.get("include_thoughts", False)))
    rid = hashlib.sha256(orjson.dumps(body, option=orjson.OPT_SORT_KEYS)).hexdigest()[:22]
    chunks: list[list[dict[str, Any]]] = []
    if thoughts:
        half = len(step.reasoning) // 2
        chunks += [[{"text": step.reasoning[:half], "thought": True}], [{"text": step.reasoning[half:], "thought": True}]]
    if step.kind == "tool":
        fc: dict[str, Any] = {"name": step.tool, "args": dict(step.args)}
        if model.lower().startswith("gemini-3"):
            fc["id"] = hashlib.sha256(f"{rid}{results}".encode()).hexdigest()[:8]
        chunks.append([{"functionCall": fc, "thoughtSignature": mint_call(state, name, fam, fc)}])
        chunks.append([{"text": ""}])
    else:
        words = step.answer.split(" ")
        mid = max(1, len(words) // 2)
        chunks += [[{"text": " ".join(words[:mid]) + " "}], [{"text": " ".join(words[mid:])}]]
        chunks.append([{"text": "", "thoughtSignature": mint_text(state, name, fam, step.answer)}])
    prompt = len(orjson.dumps(body)) // 4
    thought_tokens = len(step.reasoning) // 4 if thoughts else 0
    out = []
    for n, parts in enumerate(chunks):
        last = n == len(chunks) - 1
        cand: dict[str, Any] = {"content": {"parts": parts, "role": "model"}, "index": 0}
        if last:
            cand["finishReason"] = "STOP"
        written = sum(len(p.get("text", "")) for c in chunks[: n + 1] for p in c if not p.get("thought")) // 4 + 1
        usage = {"promptTokenCount": prompt, "candidatesTokenCount": written,
                 "totalTokenCount": prompt + written + thought_tokens, "thoughtsTokenCount": thought_tokens}
        out.append({"candidates": [cand], "usageMetadata": usage, "modelVersion": model, "responseId": rid})
    return out


def _merge(chunks: list[dict[str, Any]]) -> dict[str, Any]:
    """One non-streaming response: parts joined, empty trailing text folded into the last part."""
    parts: list[dict[str, Any]] = []
    for ch in chunks:
        for p in ch["candidates"][0]["content"]["parts"]:
            prev = parts[-1] if parts else None
            if prev is not None and "text" in p and "text" in prev and bool(p.get("thought")) == bool(prev.get("thought")) \
                    and "thoughtSignature" not in prev:
                prev["text"] += p["text"]
                if "thoughtSignature" in p:
                    prev["thoughtSignature"] = p["thoughtSignature"]
            elif p == {"text": ""}:
                continue
            else:
                parts.append(dict(p))
    final = dict(chunks[-1])
    cand = dict(final["candidates"][0])
    cand["content"] = {"parts": parts, "role": "model"}
    if any("functionCall" in p for p in parts):
        cand["finishMessage"] = "Model generated function call(s)."
    final["candidates"] = [cand]
    return final


_SAFETY = {"candidates": [{"finishReason": "SAFETY", "index": 0, "safetyRatings": [
    {"category": "HARM_CATEGORY_DANGEROUS_CONTENT", "probability": "HIGH", "blocked": True}]}]}
_NOPARTS = {"candidates": [{"content": {"role": "model"}, "index": 0}]}


def _sse(obj: Any) -> bytes:
    return b"data: " + orjson.dumps(obj) + b"\r\n\r\n"


def _build(state: EmulatorState, name: str) -> Starlette:
    vertex = name.endswith("vertex")
    families: set[str] = set()

    async def handle(request: Request) -> Response:
        path = "/" + request.path_params["path"]
        m = _PATH.match(path)
        want_prefix = "/v1/projects/test/locations/global/publishers/google" if vertex else "/v1beta"
        if not m or m["prefix"] not in (want_prefix, "/v1") or (vertex and m["prefix"] != want_prefix):
            return _error(404, "NOT_FOUND", f"Requested entity was not found: {path}")
        raw = await request.body()
        try:
            body = orjson.loads(raw)
        except orjson.JSONDecodeError:
            state.record(name, request, None)
            return _invalid("Invalid JSON payload received. Unexpected token.")
        state.record(name, request, body)
        if vertex and not request.headers.get("authorization", "").startswith("Bearer "):
            return _error(401, "UNAUTHENTICATED", "Request is missing required authentication credential. Expected "
                          "OAuth 2 access token, login cookie or other valid authentication credential.")
        if not vertex and not (request.headers.get("x-goog-api-key") or request.query_params.get("key")):
            return _error(403, "PERMISSION_DENIED", "Method doesn't allow unregistered callers (callers without "
                          "established identity). Please use API Key or other form of API consumer identity "
                          "to call this API.")
        if not isinstance(body, Mapping):
            return _invalid("Invalid JSON payload received. Expected an object.")
        found = unknown_fields(body, frozenset(state.control(name).reject_fields))
        if found:
            return _unknown(found)
        model = m["model"]
        if (refused := refusal(state.access, name, "gemini", model, request.headers, request.query_params,
                               check_key=not vertex)) is not None:
            return refused
        problem = _Checker(state, name, model, families).check(body)
        if problem is not None:
            return problem
        families.add(family(model))
        stream = m["method"] == "streamGenerateContent"
        fault = state.take_fault(name)
        if fault == "500":
            return _error(500, "INTERNAL", "An internal error has occurred. Please retry or report in "
                          "https://developers.generativeai.google/guide/troubleshooting")
        if fault == "429":
            return _error(429, "RESOURCE_EXHAUSTED", "Resource has been exhausted (e.g. check quota).")
        if (plain := transport_fault(fault)) is not None:
            return plain
        chunks = _responses(state, name, model, body)
        if fault == "safety":
            chunks = [_SAFETY]
        elif fault == "noparts":
            chunks = [_NOPARTS]
        if not stream:
            if fault == "malformed":
                return Response(b'{"candidates": [{"content": ', 200, media_type="application/json")
            data = orjson.dumps(chunks[0] if fault in ("safety", "noparts") else _merge(chunks))
            if fault == "truncate":
                data = data[: len(data) // 2]
            return Response(data, 200, media_type="application/json")
        delay = state.control(name).delay or (0.05 if fault == "slow" else 0.0)

        async def events() -> AsyncIterator[bytes]:
            send = chunks[:-1] if fault == "truncate" else chunks
            for n, ch in enumerate(send):
                if delay:
                    await asyncio.sleep(delay)
                if fault == "malformed" and n == len(send) - 1:
                    yield b"data: {\"candidates\": [{\"content\r\n\r\n"
                    return
                yield _sse(ch)

        return StreamingResponse(events(), media_type="text/event-stream")

    return Starlette(routes=[Route("/{path:path}", handle, methods=["POST"])])


register(Personality("gemini", _build, "/v1beta"))
register(Personality("gemini-vertex", _build, "/v1/projects/test/locations/global"))
