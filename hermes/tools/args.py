"""Tool arguments checked against the tool's JSON Schema before the tool runs.

The model's arguments are untrusted input. Every tool — built-in, plugin (``hermes.tools``
entry points) or MCP — declares a JSON Schema for them; ``check_args`` validates with the
``jsonschema`` library (the draft the schema names, draft 2020-12 otherwise) and returns an
error text the model can act on: every violation with its JSON path, then the schema itself
(cut to a few KB) so the next call can match it. ``None`` means the arguments are valid.

A schema that is itself invalid (a plugin bug, a sloppy MCP server) is not the model's fault:
such a tool runs unvalidated, exactly as before validation existed, and the tool checks what
it needs. Validators are compiled once per schema object and cached.

A schema is also untrusted (an MCP server writes it), so checking can neither hang nor crash:
the keywords that run a schema's regular expressions (``pattern``, ``patternProperties``,
``additionalProperties`` beside it) use the ``regex`` library under one time budget per call
(Python's ``re`` has no timeout: ``^(a+)+$`` on 40 characters runs for minutes), and a check
that runs out of time or recursion (a ``$ref`` cycle) is a tool error; the tool does not run.
A schema combining ``unevaluatedProperties`` with ``patternProperties`` (jsonschema matches
those with ``re`` deep inside) is treated as unusable: the tool runs unvalidated.

The built-in tools' schemas are flat objects of typed scalars: ``_plainly_valid`` accepts
arguments that certainly match such a schema without importing ``jsonschema`` (slow to
import); anything it is not sure of — another keyword, a nested schema, a mismatch — goes to
``jsonschema``, which also writes every error text.
"""

from __future__ import annotations

import contextvars
import functools
import time
from collections.abc import Iterator, Mapping
from typing import Any

import orjson

__all__ = ["check_args"]

MAX_ERRORS = 8
"""Violations listed before "... and N more"."""
MAX_SCHEMA = 2000
"""Characters of the schema echoed back to the model."""
PATTERN_BUDGET_S = 0.5
"""Seconds all of one call's regular-expression matches may take together."""

_DEADLINE: contextvars.ContextVar[float] = contextvars.ContextVar("toolargs_deadline", default=0.0)


class _TooSlow(Exception):
    """A schema pattern used up the call's time budget."""

    def __init__(self, pattern: str) -> None:
        super().__init__(pattern)
        self.pattern = pattern


@functools.lru_cache(maxsize=1024)
def _compiled(pattern: str) -> Any:
    """``pattern`` compiled by ``regex``, or None when ``regex`` cannot read it (the keyword is
    then not checked, as for an invalid schema)."""
    import regex

    try:
        return regex.compile(pattern)
    except (regex.error, ValueError, TypeError, RecursionError):
        return None


def _search(pattern: str, text: str) -> bool:
    """``re.search(pattern, text)`` for a schema, within the call's time budget."""
    compiled = _compiled(pattern)
    if compiled is None:
        return True
    left = _DEADLINE.get() - time.monotonic()
    if left <= 0:
        raise _TooSlow(pattern)
    try:
        return compiled.search(text, timeout=left) is not None
    except TimeoutError:
        raise _TooSlow(pattern) from None


def _pattern(validator: Any, patrn: str, instance: Any, schema: Any) -> Iterator[Any]:
    from jsonschema.exceptions import ValidationError

    if validator.is_type(instance, "string") and not _search(patrn, instance):
        yield ValidationError(f"{instance!r} does not match {patrn!r}")


def _pattern_properties(validator: Any, pattern_properties: Any, instance: Any, schema: Any) -> Iterator[Any]:
    if not validator.is_type(instance, "object"):
        return
    for patrn, subschema in pattern_properties.items():
        for k, v in instance.items():
            if _search(patrn, k):
                yield from validator.descend(v, subschema, path=k, schema_path=patrn)


def _additional_properties(validator: Any, ap: Any, instance: Any, schema: Any) -> Iterator[Any]:
    """jsonschema's ``additionalProperties``, matching ``patternProperties`` through ``_search``."""
    from jsonschema.exceptions import ValidationError

    if not validator.is_type(instance, "object"):
        return
    properties = schema.get("properties", {})
    patterns = list(schema.get("patternProperties", {}))
    extras = [k for k in instance if k not in properties and not any(_search(p, k) for p in patterns)]
    if validator.is_type(ap, "object"):
        for extra in extras:
            yield from validator.descend(instance[extra], ap, path=extra)
    elif not ap and extras:
        if patterns:
            yield ValidationError(f"{', '.join(repr(e) for e in sorted(extras))} "
                                  f"{'does' if len(extras) == 1 else 'do'} not match any of the regexes: "
                                  f"{', '.join(repr(p) for p in sorted(patterns))}")
        else:
            shown = ", ".join(repr(e) for e in sorted(extras, key=str))
            yield ValidationError(f"Additional properties are not allowed ({shown} "
                                  f"{'was' if len(extras) == 1 else 'were'} unexpected)")


_BOUNDED = {"pattern": _pattern, "patternProperties": _pattern_properties,
            "additionalProperties": _additional_properties}


def _keys(node: Any) -> Iterator[str]:
    """Every mapping key anywhere in a (plain JSON) schema."""
    stack = [node]
    while stack:
        n = stack.pop()
        if isinstance(n, dict):
            yield from n
            stack.extend(n.values())
        elif isinstance(n, list):
            stack.extend(n)

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

    v: Any = None
    try:
        plain = orjson.loads(_dumps(schema))  # jsonschema's "object" is a dict, not any Mapping
        keys = set(_keys(plain))
        if not {"unevaluatedProperties", "patternProperties"} <= keys:
            cls = validators.validator_for(plain, default=validators.Draft202012Validator)
            cls.check_schema(plain)
            v = validators.extend(cls, {k: f for k, f in _BOUNDED.items() if k in cls.VALIDATORS})(plain)
    except (exceptions.SchemaError, orjson.JSONEncodeError, RecursionError):
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
    token = _DEADLINE.set(time.monotonic() + PATTERN_BUDGET_S)
    try:
        errors = sorted(v.iter_errors(args), key=lambda e: (list(e.absolute_path), e.message))
    except _TooSlow as slow:
        return (f"arguments for {name} could not be checked: its schema's pattern {slow.pattern[:200]!r} took "
                f"longer than {PATTERN_BUDGET_S:g} s on them. The tool did not run; try shorter or simpler values.")
    except RecursionError:
        return (f"arguments for {name} could not be checked: its schema refers to itself without end "
                "(a $ref cycle) or the arguments nest too deeply. The tool did not run.")
    finally:
        _DEADLINE.reset(token)
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
