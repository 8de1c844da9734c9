"""Who may call an emulator, and with which models: the 404s and 401s of the real providers.

A personality knows a model when a Hermes profile row matches it (``hermes.routing.models``), when it is
one of the personality's own models (its ``GET /models`` list), or when it was added with
``EmulatorState.add_models`` / ``POST /_control/NAME {"models": [...]}`` (globs). Anything else
is answered as the provider answers an unknown model. Keys: any non-empty key is accepted unless
the emulator was given a key list (``hermes emulate`` accepts only ``sk-emulator`` by default).
Each refusal body is the provider's own (docs/emulators.md, "Unknown models and bad keys").
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping
from fnmatch import fnmatchcase
from typing import Any

from starlette.responses import JSONResponse, Response

from ..routing.models import matching_rows, model_key

__all__ = ["Access", "bad_key", "key_of", "refusal", "unknown_model"]


class Access:
    """The key list and the models added per personality; thread-safe."""

    def __init__(self, keys: Iterable[str] | None = None) -> None:
        self.keys: frozenset[str] | None = None if keys is None else frozenset(keys)
        self._added: dict[str, set[str]] = {}
        self._lock = threading.Lock()

    def add_models(self, personality: str, *globs: str) -> None:
        """Models (globs, case-insensitive) ``personality`` serves besides the profiled ones."""
        with self._lock:
            self._added.setdefault(personality, set()).update(g.lower() for g in globs)

    def knows(self, personality: str, model: str, own: Iterable[str] = ()) -> bool:
        if not model:
            return False
        low = model.lower()
        with self._lock:
            added = tuple(self._added.get(personality, ())) + tuple(self._added.get("*", ()))
        if any(fnmatchcase(low, g) for g in added):
            return True
        key = model_key(model)
        return any(low == o.lower() or key == model_key(o) for o in own) or bool(matching_rows(model))

    def admits(self, key: str) -> bool:
        return bool(key) and (self.keys is None or key in self.keys)


def key_of(headers: Mapping[str, str], query: Mapping[str, str] | None = None) -> str:
    """The credential a request carries: a bearer token, ``x-api-key``, ``api-key``,
    ``x-goog-api-key`` or Gemini's ``?key=``."""
    auth = headers.get("authorization", "")
    if auth.lower().startswith("bearer "):
        return auth[7:].strip()
    for name in ("x-api-key", "api-key", "x-goog-api-key"):
        if headers.get(name):
            return headers[name]
    return (query or {}).get("key", "")


def _masked(key: str) -> str:
    return f"{key[:3]}{'*' * max(0, len(key) - 7)}{key[-4:]}" if len(key) > 8 else "*" * len(key)


def unknown_model(style: str, model: str) -> Response:
    """The provider's answer to a model it does not serve."""
    body: dict[str, Any]
    if style == "deepseek":  # 400, not 404
        status, body = 400, {"error": {"message": "Model Not Exist", "type": "invalid_request_error",
                                       "param": None, "code": "invalid_request_error"}}
    elif style == "anthropic":
        status, body = 404, {"type": "error", "error": {"type": "not_found_error", "message": f"model: {model}"}}
    elif style == "gemini":
        status, body = 404, {"error": {"code": 404, "status": "NOT_FOUND", "message": (
            f"models/{model} is not found for API version v1beta, or is not supported for generateContent. "
            "Call ListModels to see the list of available models and their supported methods.")}}
    else:  # OpenAI's words, which the compatible servers copy
        status, body = 404, {"error": {"message": f"The model `{model}` does not exist or you do not have access "
                                                  "to it.", "type": "invalid_request_error", "param": None,
                                       "code": "model_not_found"}}
    return JSONResponse(body, status_code=status)


def bad_key(style: str, key: str) -> Response:
    """The provider's answer to a key it does not know."""
    body: dict[str, Any]
    if style == "deepseek":
        status, body = 401, {"error": {"message": f"Authentication Fails, Your api key: ****{key[-4:]} is invalid",
                                       "type": "authentication_error", "param": None, "code": "invalid_request_error"}}
    elif style == "anthropic":
        status, body = 401, {"type": "error", "error": {"type": "authentication_error", "message": "invalid x-api-key"}}
    elif style == "gemini":  # 400, not 401
        status, body = 400, {"error": {"code": 400, "message": "API key not valid. Please pass a valid API key.",
                                       "status": "INVALID_ARGUMENT", "details": [{
                                           "@type": "type.googleapis.com/google.rpc.ErrorInfo",
                                           "reason": "API_KEY_INVALID", "domain": "googleapis.com",
                                           "metadata": {"service": "generativelanguage.googleapis.com"}}]}}
    else:
        status, body = 401, {"error": {"message": f"Incorrect API key provided: {_masked(key)}. You can find your "
                                                  "API key at https://platform.openai.com/account/api-keys.",
                                       "type": "invalid_request_error", "param": None, "code": "invalid_api_key"}}
    return JSONResponse(body, status_code=status)


def refusal(access: Access, personality: str, style: str, model: str, headers: Mapping[str, str],
            query: Mapping[str, str] | None = None, own: Iterable[str] = (), *,
            check_key: bool = True) -> Response | None:
    """The 401 of a key outside the key list, else the unknown-model answer, else None (the
    key first, as the providers check it before reading the body)."""
    if check_key and access.keys is not None and not access.admits(key := key_of(headers, query)):
        return bad_key(style, key)
    if not access.knows(personality, model, own):
        return unknown_model(style, model)
    return None
