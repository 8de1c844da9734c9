"""Tool arguments are validated against the tool's JSON Schema before the tool runs — built-in,
plugin (a real entry point) and MCP tools alike — and the model gets an error it can act on."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jsonschema
import orjson
import pytest
from _plugin import install_plugin
from hypothesis import given, settings
from hypothesis import strategies as st

from hermes.core.messages import ToolCall
from hermes.tools.args import check_args
from hermes.tools.builtins import Tool, Toolbox, ToolContext, load_toolbox
from hermes.wire import ToolSpec

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "mode": {"enum": ["fast", "exact"]},
        "limit": {"type": "integer", "minimum": 1, "maximum": 100},
        "paths": {"type": "array", "items": {"type": "string"}, "minItems": 1},
        "opts": {"type": "object", "properties": {"depth": {"type": "integer"}}, "additionalProperties": False},
    },
    "required": ["paths"],
}


def counting_tool(schema: dict[str, Any]) -> tuple[Tool, list[dict[str, Any]]]:
    ran: list[dict[str, Any]] = []
    return Tool(ToolSpec("scan", "Scan paths.", schema), lambda args, ctx: ran.append(dict(args)) or "ok"), ran


def call(box: Toolbox, name: str, args: Any) -> tuple[bool, str]:
    r = box.execute(ToolCall("c1", name, orjson.dumps(args).decode()))
    return r.is_error, r.content


def test_bad_arguments_never_reach_the_tool_and_every_violation_is_named() -> None:
    tool, ran = counting_tool(SCHEMA)
    box = Toolbox([tool])
    is_error, text = call(box, "scan", {"mode": "slow", "limit": 0, "paths": [1], "opts": {"depth": "x", "y": 1}})
    assert is_error and ran == []
    assert text.splitlines()[:6] == [
        "error: arguments for scan do not match its schema:",
        "- $.limit: 0 is less than the minimum of 1",
        "- $.mode: 'slow' is not one of ['fast', 'exact']",
        "- $.opts: Additional properties are not allowed ('y' was unexpected)",
        "- $.opts.depth: 'x' is not of type 'integer'",
        "- $.paths[0]: 1 is not of type 'string'",
    ]
    assert text.splitlines()[-1].startswith("The tool did not run. Call scan again with arguments matching: {")
    assert call(box, "scan", {})[1].splitlines()[1] == "- $: 'paths' is a required property"
    assert call(box, "scan", {"paths": ["a"], "limit": 5}) == (False, "ok") and ran == [{"paths": ["a"], "limit": 5}]


def test_builtin_tools_are_validated_too(tmp_path: Path) -> None:
    box = load_toolbox(ToolContext(cwd=tmp_path), plugins=False)
    is_error, text = call(box, "read_file", {"path": 7})
    assert is_error and "- $.path: 7 is not of type 'string'" in text
    is_error, text = call(box, "search_files", {})
    assert is_error and "- $: 'pattern' is a required property" in text


def test_entry_point_plugin_tools_are_validated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    install_plugin(
        tmp_path, monkeypatch, "hermes_count_plugin", "count",
        "from hermes.tools.builtins import Tool\nfrom hermes.wire import ToolSpec\nRAN = []\n"
        "SCHEMA = {'type': 'object', 'properties': {'n': {'type': 'integer', 'minimum': 0}}, 'required': ['n']}\n"
        "def tools():\n    return [Tool(ToolSpec('count', 'Count.', SCHEMA), lambda a, c: RAN.append(a) or str(a['n']))]\n")
    box = load_toolbox()
    is_error, text = call(box, "count", {"n": -1})
    assert is_error and "- $.n: -1 is less than the minimum of 0" in text
    import hermes_count_plugin  # type: ignore[import-not-found]

    assert hermes_count_plugin.RAN == []
    assert call(box, "count", {"n": 3}) == (False, "3")


def test_a_read_only_mapping_schema_still_gets_a_precise_error() -> None:
    from types import MappingProxyType

    tool, ran = counting_tool(MappingProxyType(SCHEMA))  # type: ignore[arg-type]
    is_error, text = call(Toolbox([tool]), "scan", {"paths": "a"})
    assert is_error and ran == [] and "- $.paths: 'a' is not of type 'array'" in text and '"minItems":1' in text


def test_a_tool_with_an_invalid_schema_runs_unvalidated() -> None:
    tool, ran = counting_tool({"type": "object", "properties": {"x": {"type": "no-such-type"}}})
    assert call(Toolbox([tool]), "scan", {"x": 1}) == (False, "ok") and ran == [{"x": 1}]


def test_a_schema_naming_its_draft_is_validated_by_that_draft() -> None:
    draft4 = {"$schema": "http://json-schema.org/draft-04/schema#", "type": "object",
              "properties": {"n": {"type": "number", "maximum": 5, "exclusiveMaximum": True}}}
    assert check_args("t", draft4, {"n": 5}) is not None  # draft 4: boolean exclusiveMaximum
    assert check_args("t", draft4, {"n": 4.9}) is None


LEAF = st.none() | st.booleans() | st.integers(-5, 200) | st.text(max_size=4)
JSON = LEAF | st.lists(LEAF, max_size=3) | st.dictionaries(st.text(max_size=5), LEAF, max_size=3)
ARGS = st.fixed_dictionaries({}, optional={"mode": st.sampled_from(["fast", "exact", "x"]) | JSON,
                                           "limit": st.integers(-2, 102) | JSON, "paths": st.lists(st.text(max_size=3)) | JSON,
                                           "opts": st.fixed_dictionaries({}, optional={"depth": JSON}) | JSON})


@settings(max_examples=300, deadline=None)
@given(ARGS)
def test_the_tool_runs_exactly_when_the_schema_accepts_the_arguments(args: dict[str, Any]) -> None:
    tool, ran = counting_tool(SCHEMA)
    is_error, text = call(Toolbox([tool]), "scan", args)
    valid = jsonschema.Draft202012Validator(SCHEMA).is_valid(args)
    assert (not is_error) == valid == bool(ran)
    if not valid:
        assert text.startswith("error: arguments for scan do not match its schema:\n- $")


SCALAR_TYPES = ["string", "boolean", "integer", "number", "null"]
FLAT_SCHEMAS = st.builds(
    lambda props, req, extra, noise: {
        "type": "object",
        "properties": {k: {"type": t, "description": "d"} | noise for k, t in props.items()},
        "required": sorted(set(req)),
        **({} if extra is None else {"additionalProperties": extra}),
    },
    st.dictionaries(st.sampled_from("abcd"), st.sampled_from(SCALAR_TYPES), max_size=4),
    st.lists(st.sampled_from("abcde"), max_size=3),
    st.none() | st.booleans(),
    st.sampled_from([{}, {"default": 1}, {"minLength": 2}, {"enum": ["x", 1]}]),
)
FLAT_ARGS = st.dictionaries(st.sampled_from("abcde"), LEAF | st.floats(-3, 3) | st.just(2.0), max_size=5)


@settings(max_examples=400, deadline=None)
@given(FLAT_SCHEMAS, FLAT_ARGS)
def test_the_plain_fast_path_agrees_with_jsonschema(schema: dict[str, Any], args: dict[str, Any]) -> None:
    """The no-import fast path for flat schemas (the built-ins' shape) only ever says "valid"
    where jsonschema does; everything else gets jsonschema's verdict and text."""
    from hermes.tools.args import _plainly_valid

    valid = jsonschema.Draft202012Validator(schema).is_valid(args)
    if _plainly_valid(schema, args):
        assert valid
    assert (check_args("t", schema, args) is None) == valid


def test_the_builtin_tools_valid_calls_take_the_fast_path(tmp_path: Path) -> None:
    from hermes.tools.args import _plainly_valid

    box = load_toolbox(ToolContext(cwd=tmp_path), plugins=False)
    specs = {s.name: s.parameters for s in box.specs}
    assert _plainly_valid(specs["read_file"], {"path": "a.py"})
    assert _plainly_valid(specs["search_files"], {"pattern": "x", "regex": True})
    assert not _plainly_valid(specs["search_files"], {"pattern": "x", "regex": "yes"})  # jsonschema says why


def test_a_ref_cycle_is_a_tool_error_and_the_tool_does_not_run() -> None:
    """jsonschema follows a ``$ref`` cycle until ``RecursionError``; that was raised out of
    ``Toolbox.execute``. The schema passes ``check_schema``, so only the check itself can fail."""
    tool, ran = counting_tool({"type": "object", "$defs": {"n": {"$ref": "#/$defs/n"}}, "$ref": "#/$defs/n"})
    is_error, text = call(Toolbox([tool]), "scan", {"a": 1})
    assert is_error and ran == [] and "refers to itself without end" in text


def test_schema_patterns_match_as_jsonschema_does() -> None:
    """``pattern``, ``patternProperties`` and ``additionalProperties`` run on ``regex`` under a
    time budget, with jsonschema's own messages."""
    schema = {"type": "object", "properties": {"id": {"type": "string", "pattern": "^[a-z]+-[0-9]+$"}},
              "patternProperties": {"^x-": {"type": "integer"}}, "additionalProperties": False}
    tool, ran = counting_tool(schema)
    box = Toolbox([tool])
    assert call(box, "scan", {"id": "ab-12", "x-n": 3}) == (False, "ok")
    is_error, text = call(box, "scan", {"id": "AB-12", "x-n": "3", "other": 1})
    assert is_error and text.splitlines()[1:4] == [
        "- $: 'other' does not match any of the regexes: '^x-'",
        "- $.id: 'AB-12' does not match '^[a-z]+-[0-9]+$'",
        "- $.x-n: '3' is not of type 'integer'",
    ]
    assert ran == [{"id": "ab-12", "x-n": 3}]
