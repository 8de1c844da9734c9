"""Error dialects of the chat-completions emulator personalities: each provider's own words.

``error_body`` gives a generic error in a dialect (must-echo, signatures, faults);
``unknown_field_error`` gives the real unknown-field error for a key at a path. A personality
names its dialect in ``Facts.errors`` (``chat_rules``). Pure functions.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import orjson

__all__ = ["error_body", "openai_error", "unknown_field_error"]


def openai_error(message: str, *, code: Any = None, param: Any = None) -> dict[str, Any]:
    """OpenAI's error envelope (the wording most compatible servers copy)."""
    return {"error": {"message": message, "type": "invalid_request_error", "param": param, "code": code}}


def error_body(style: str, message: str, *, status: int = 400) -> dict[str, Any]:
    """A generic error in a dialect (used for must-echo, signatures and faults)."""
    if style == "openrouter":
        return {"error": {"code": status, "message": message, "metadata": {}}}
    if style == "gemini":
        return {"error": {"code": status, "message": message, "status": "INVALID_ARGUMENT"}}
    if style == "cerebras":
        return {"message": message, "type": "invalid_request_error", "param": "", "code": ""}
    if style == "mistral":
        return {"object": "error", "message": message, "type": "invalid_request_error", "param": None, "code": None}
    if style == "zai":
        return {"error": {"code": "1210", "message": message}}
    if style == "deepseek":
        return openai_error(message, code="invalid_request_error")
    return openai_error(message)


def unknown_field_error(style: str, path: Sequence[str | int], key: str, *, value: Any = None,
                        accepted: Sequence[str] = (), body_len: int = 0,
                        provider: str = "") -> tuple[int, dict[str, Any]]:
    """Provider ``style``'s real unknown-field error for ``key`` under ``path`` (``()`` = top level).

    ``path`` is like ``("messages", 2, "assistant")`` or ``("messages", 2, "assistant",
    "tool_calls", 0, "function")``; the role segment is dropped where a dialect does not show it.
    """
    plain = [p for p in path if p != "assistant"]
    dotted = ".".join(str(p) for p in plain)
    if style == "mistral":
        return 422, {"object": "error", "message": {"detail": [{
            "type": "extra_forbidden", "loc": ["body", *path, key], "msg": "Extra inputs are not permitted",
            "input": value}]}, "type": "invalid_request_error", "param": None, "code": None}
    if style == "groq":
        if not path:
            return 400, {"error": {"message": f"property '{key}' is unsupported", "type": "invalid_request_error"}}
        msg_path = ".".join(str(p) for p in plain[:2])
        return 400, {"error": {"message": f"'{msg_path}' : for 'role:assistant' the following must be satisfied"
                                          f"[('{dotted}' : property '{key}' is unsupported)]",
                               "type": "invalid_request_error"}}
    if style == "cerebras":
        full = ".".join(str(p) for p in (*path, key))
        return 400, {"message": f"{full}: property '{full}' is unsupported", "type": "invalid_request_error",
                     "param": "validation_error", "code": "wrong_api_format"}
    if style == "gemini":
        where = "".join(f"[{p}]" if isinstance(p, int) else (f".{p}" if i else p) for i, p in enumerate(plain))
        msg = f'Invalid JSON payload received. Unknown name "{key}"' + (f" at '{where}'" if where else "") + \
            ": Cannot find field."
        return 400, {"error": {"code": 400, "message": msg, "status": "INVALID_ARGUMENT", "details": [{
            "@type": "type.googleapis.com/google.rpc.BadRequest",
            "fieldViolations": [{"field": f"{where}.{key}" if where else key, "description": msg}]}]}}
    if style == "deepseek":
        where = "".join(f"[{p}]" if isinstance(p, int) else (f".{p}" if i else p) for i, p in enumerate(plain))
        expected = ", ".join(f"`{a}`" for a in accepted)
        return 400, openai_error(f"Failed to deserialize the JSON body into the target type: {where + ': ' if where else ''}"
                         f"unknown field `{key}`, expected one of {expected} at line 1 column {body_len}",
                         code="invalid_request_error")
    if path:
        inner = openai_error(f"Additional properties are not allowed ('{key}' was unexpected) - '{dotted}'")
    else:
        inner = openai_error(f"Unrecognized request argument supplied: {key}")
    if style == "openrouter":
        return 400, {"error": {"code": 400, "message": "Provider returned error", "metadata": {
            "raw": orjson.dumps(inner).decode(), "provider_name": provider or "OpenAI", "is_byok": False}}}
    return 400, inner
