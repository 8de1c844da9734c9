"""Tool arguments checked against the tool's JSON Schema before the tool runs.

The model's arguments are untrusted input. Every tool — built-in, plugin (``hermes.tools``
entry points) or MCP — declares a JSON Schema for them; ``check_args`` validates with the
``jsonschema`` library (the draft the schema names, draft 2020-12 otherwise) and returns an
error text the model can act on: every violation with its JSON path, then the schema itself
(cut to a few KB) so the next call can match it. ``None`` means the arguments are valid.

A schema that is itself invalid (a plugin bug, a sloppy MCP server) is not the model's fault:
such a tool runs unvalidated, exactly as before validation existed, and the tool checks what
it needs. Validators are compiled once per schema object and cached.

The built-in tools' schemas are flat objects of typed scalars: ``_plainly_valid`` accepts
arguments that certainly match such a schema without importing ``jsonschema`` (slow to
import); anything it is not sure of — another keyword, a nested schema, a mismatch — goes to
``jsonschema``, which also writes every error text.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import orjson

__all__ = ["check_args"]

MAX_ERRORS = 8
"""Violations listed before "... and N more"."""
MAX_SCHEMA = 2000
"""Characters of the schema echoed back to the model."""

_VALIDATORS: dict[int, tuple[Mapping[str, Any], Any]] = {}


_SCALARS: Mapping[str, Any] = {
    "string": lambda v: isinstance(v, str),
    "boolean": lambda v: isinstance(v, bool),
    "integer": lambda v: type(v) is int,
    "number": lambda v: type(v) is int or type(v) is float,
    "null": lambda v: v is None,
}
"""JSON Schema's scalar types, stricter than ``jsonschema``'s checker (``1.0`` is an integer
there): a value this rejects is only sent on to ``jsonschema``."""
_OBJECT_KEYS = frozenset({"type", "properties", "required", "additionalProperties", "description", "title"})
_SCALAR_KEYS = frozenset({"type", "description", "title", "default", "examples"})


def _plainly_valid(schema: Mapping[str, Any], args: Mapping[str, Any]) -> bool:
    """True only when ``args`` certainly match ``schema`` (draft 2020-12, no ``$schema``): an
    object of scalar-typed properties, ``required`` and a boolean ``additionalProperties``.
    False means "not sure", never "invalid"."""
    if not _OBJECT_KEYS.issuperset(schema) or schema.get("type") != "object" or type(args) is not dict:
        return False
    props = schema.get("properties", {})
    required = schema.get("required", [])
    extra = schema.get("additionalProperties", True)
    if not isinstance(props, Mapping) or not isinstance(required, list) or not isinstance(extra, bool):
        return False
    if not all(isinstance(k, str) and k in args for k in required):
        return False
    for key, value in args.items():
        sub = props.get(key)
        if sub is None:
            if not extra:
                return False
            continue
        if not isinstance(sub, Mapping) or not _SCALAR_KEYS.issuperset(sub):
            return False
        check = _SCALARS.get(sub["type"]) if isinstance(sub.get("type"), str) else None
        if check is None or not check(value):
            return False
    return True


def _validator(schema: Mapping[str, Any]) -> Any:
    """A compiled validator for ``schema``, or None when the schema itself is invalid."""
    hit = _VALIDATORS.get(id(schema))
    if hit is not None and hit[0] is schema:
        return hit[1]
    from jsonschema import exceptions, validators

    plain = orjson.loads(_dumps(schema))  # jsonschema's "object" is a dict, not any Mapping
    cls = validators.validator_for(plain, default=validators.Draft202012Validator)
    try:
        cls.check_schema(plain)
        v: Any = cls(plain)
    except exceptions.SchemaError:
        v = None
    if len(_VALIDATORS) > 4096:
        _VALIDATORS.clear()
    _VALIDATORS[id(schema)] = (schema, v)
    return v


def _dumps(schema: Mapping[str, Any]) -> bytes:
    return orjson.dumps(schema, option=orjson.OPT_SORT_KEYS,
                        default=lambda o: dict(o) if isinstance(o, Mapping) else str(o))


def _where(path: Any) -> str:
    out = "$"
    for p in path:
        out += f"[{p}]" if isinstance(p, int) else f".{p}"
    return out


def check_args(name: str, schema: Mapping[str, Any] | None, args: Mapping[str, Any]) -> str | None:
    """None if ``args`` match ``schema``; else a precise message for the model."""
    if not schema or _plainly_valid(schema, args):
        return None
    v = _validator(schema)
    if v is None:
        return None
    errors = sorted(v.iter_errors(args), key=lambda e: (list(e.absolute_path), e.message))
    if not errors:
        return None
    lines = [f"arguments for {name} do not match its schema:"]
    for e in errors[:MAX_ERRORS]:
        lines.append(f"- {_where(e.absolute_path)}: {e.message[:300]}")
    if len(errors) > MAX_ERRORS:
        lines.append(f"- ... and {len(errors) - MAX_ERRORS} more")
    shown = _dumps(schema).decode()
    if len(shown) > MAX_SCHEMA:
        shown = shown[:MAX_SCHEMA] + " …"
    lines.append(f"The tool did not run. Call {name} again with arguments matching: {shown}")
    return "\n".join(lines)
