"""Strict proto-JSON validation of a ``GenerateContentRequest``, as the Gemini API does it.

Google's front end rejects any name its proto does not define with a 400 whose text clients
match on (``Invalid JSON payload received. Unknown name "x" at 'contents[0].parts[0]': Cannot
find field.``). Proto3 JSON accepts both ``lowerCamel`` and ``snake_case`` spellings; error
paths use ``snake_case``. Free-form ``Struct`` fields (``args``, ``response``,
``parametersJsonSchema``) are not checked inside.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

__all__ = ["SCHEMA", "camel", "unknown_fields"]

_S = "scalar"
_STRUCT = "struct"
# message name -> {camelCase field -> type}; a type is _S, _STRUCT, a message name,
# ("list", type) or ("map", type).
SCHEMA: dict[str, dict[str, Any]] = {
    "Request": {"model": _S, "contents": ("list", "Content"), "systemInstruction": "Content",
                "tools": ("list", "Tool"), "toolConfig": "ToolConfig", "safetySettings": ("list", "SafetySetting"),
                "generationConfig": "GenerationConfig", "cachedContent": _S, "labels": _STRUCT},
    "Content": {"role": _S, "parts": ("list", "Part")},
    "Part": {"text": _S, "thought": _S, "thoughtSignature": _S, "inlineData": "Blob", "fileData": "FileData",
             "functionCall": "FunctionCall", "functionResponse": "FunctionResponse",
             "executableCode": _STRUCT, "codeExecutionResult": _STRUCT, "videoMetadata": _STRUCT,
             "partMetadata": _STRUCT, "mediaResolution": _STRUCT},
    "Blob": {"mimeType": _S, "data": _S, "displayName": _S},
    "FileData": {"mimeType": _S, "fileUri": _S, "displayName": _S},
    "FunctionCall": {"id": _S, "name": _S, "args": _STRUCT},
    "FunctionResponse": {"id": _S, "name": _S, "response": _STRUCT, "willContinue": _S, "scheduling": _S,
                         "parts": ("list", _STRUCT)},
    "Tool": {"functionDeclarations": ("list", "FunctionDeclaration"), "googleSearch": _STRUCT,
             "googleSearchRetrieval": _STRUCT, "codeExecution": _STRUCT, "urlContext": _STRUCT,
             "retrieval": _STRUCT, "computerUse": _STRUCT, "fileSearch": _STRUCT, "googleMaps": _STRUCT},
    "FunctionDeclaration": {"name": _S, "description": _S, "parameters": "Schema", "parametersJsonSchema": _STRUCT,
                            "response": "Schema", "responseJsonSchema": _STRUCT, "behavior": _S},
    "Schema": {"type": _S, "format": _S, "title": _S, "description": _S, "nullable": _S, "enum": ("list", _S),
               "maxItems": _S, "minItems": _S, "properties": ("map", "Schema"), "required": ("list", _S),
               "minProperties": _S, "maxProperties": _S, "minLength": _S, "maxLength": _S, "pattern": _S,
               "example": _STRUCT, "anyOf": ("list", "Schema"), "propertyOrdering": ("list", _S),
               "default": _STRUCT, "items": "Schema", "minimum": _S, "maximum": _S},
    "ToolConfig": {"functionCallingConfig": "FunctionCallingConfig", "retrievalConfig": _STRUCT},
    "FunctionCallingConfig": {"mode": _S, "allowedFunctionNames": ("list", _S)},
    "SafetySetting": {"category": _S, "threshold": _S, "method": _S},
    "GenerationConfig": {"stopSequences": ("list", _S), "responseMimeType": _S, "responseSchema": "Schema",
                         "responseJsonSchema": _STRUCT, "responseModalities": ("list", _S), "candidateCount": _S,
                         "maxOutputTokens": _S, "temperature": _S, "topP": _S, "topK": _S, "seed": _S,
                         "presencePenalty": _S, "frequencyPenalty": _S, "responseLogprobs": _S, "logprobs": _S,
                         "enableEnhancedCivicAnswers": _S, "speechConfig": _STRUCT,
                         "thinkingConfig": "ThinkingConfig", "imageConfig": _STRUCT, "mediaResolution": _S,
                         "audioTimestamp": _S, "routingConfig": _STRUCT, "modelSelectionConfig": _STRUCT,
                         "enableAffectiveDialog": _S},
    "ThinkingConfig": {"includeThoughts": _S, "thinkingBudget": _S, "thinkingLevel": _S},
}


def camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(w[:1].upper() + w[1:] for w in rest)


def _snake(name: str) -> str:
    return re.sub(r"(?<!^)([A-Z])", r"_\1", name).lower()


def unknown_fields(body: Any, rejected: frozenset[str] = frozenset()) -> list[tuple[str, str]]:
    """(name, path) for each unknown name in the request; ``rejected`` names count as unknown."""
    out: list[tuple[str, str]] = []
    _walk(body, "Request", "", out, rejected)
    return out


def _walk(value: Any, kind: Any, path: str, out: list[tuple[str, str]], rejected: frozenset[str]) -> None:
    if isinstance(kind, tuple):
        container, inner = kind
        if container == "list" and isinstance(value, list):
            for i, item in enumerate(value):
                _walk(item, inner, f"{path}[{i}]", out, rejected)
        elif container == "map" and isinstance(value, Mapping):
            for k, item in value.items():
                _walk(item, inner, f"{path}[{k}]".lstrip("."), out, rejected)
        return
    if kind in (_S, _STRUCT) or not isinstance(value, Mapping):
        return
    fields = SCHEMA[kind]
    for name, item in value.items():
        camel_name = camel(name)
        if camel_name not in fields or name in rejected or camel_name in rejected:
            out.append((name, path))
            continue
        _walk(item, fields[camel_name], f"{path}.{_snake(camel_name)}".lstrip("."), out, rejected)
