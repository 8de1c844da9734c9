"""The scripted reasoning model every personality plays: think, call one tool, then answer.

Deterministic in its inputs so tests can predict what was thought and check that it comes
back on the next request.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Step", "directed_step", "fill_args", "next_step"]


@dataclass(frozen=True)
class Step:
    kind: str
    """``tool`` or ``answer``."""
    reasoning: str
    tool: str | None = None
    args: Mapping[str, Any] = field(default_factory=dict)
    answer: str = ""


def fill_args(schema: Mapping[str, Any] | None) -> dict[str, Any]:
    """Arguments satisfying a JSON schema's required properties (strings get ``"."``)."""
    props = (schema or {}).get("properties") or {}
    required = (schema or {}).get("required") or list(props)[:1]
    out: dict[str, Any] = {}
    for name in required:
        typ = (props.get(name) or {}).get("type", "string")
        out[name] = {"string": ".", "integer": 1, "number": 1, "boolean": False,
                     "array": [], "object": {}}.get(typ, ".")
    return out


def next_step(*, user_text: str, tools: Sequence[tuple[str, Mapping[str, Any] | None]],
              tool_results_since_user: int, model: str, seq: int = 0) -> Step:
    """Call the first offered tool once per user turn, then answer."""
    tag = hashlib.sha256(f"{model}\0{user_text}\0{tool_results_since_user}".encode()).hexdigest()[:10]
    asked = user_text.strip().replace("\n", " ")[:60]
    if tools and tool_results_since_user == 0:
        name, schema = tools[0]
        return Step("tool", f"The user asked: {asked!r}. Before answering I should inspect the workspace "
                            f"with {name}. [trace {tag}]", name, fill_args(schema))
    return Step("answer", f"I now have what I need for {asked!r}; summarising the result. [trace {tag}]",
                answer=f"Done ({model}): answered {asked!r} after {tool_results_since_user} tool result(s).")


_CALL = re.compile(r"#call=([A-Za-z0-9_.-]+)")


def directed_step(*, user_text: str, tool_results_since_user: int, model: str) -> Step | None:
    """A turn the user text scripts: each ``#call=NAME{json args}`` is one tool step, in order,
    then the answer. None when the text has no ``#call=`` (the default script plays).

    Lets a scenario test drive a multi-step turn through chosen tools (MCP tools, bad arguments)
    on any personality that consults it."""
    calls: list[tuple[str, dict[str, Any]]] = []
    for m in _CALL.finditer(user_text):
        args: Any = {}
        if user_text[m.end():m.end() + 1] == "{":
            try:
                args = json.JSONDecoder().raw_decode(user_text, m.end())[0]
            except ValueError:
                args = {}
        calls.append((m.group(1), args if isinstance(args, dict) else {}))
    if not calls:
        return None
    n = tool_results_since_user
    tag = hashlib.sha256(f"{model}\0{user_text}\0{n}".encode()).hexdigest()[:10]
    if n < len(calls):
        name, args = calls[n]
        return Step("tool", f"Step {n + 1} of {len(calls)}: I will call {name}. [trace {tag}]", name, args)
    return Step("answer", f"All {len(calls)} scripted calls are done; answering. [trace {tag}]",
                answer=f"Done ({model}): {len(calls)} scripted tool call(s) made.")
