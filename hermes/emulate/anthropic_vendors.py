"""The vendors' own Anthropic-compatible endpoints: DeepSeek, Kimi, MiMo and MiniMax. Pure rules.

They speak Anthropic's Messages shape (the schema checks of ``anthropic_rules`` apply) but are
other services with their own rules, each from a public source (docs/emulators.md):

* their models think unless ``thinking.type`` is ``disabled``, at every step of a tool loop;
* they never verify a thinking block's ``signature``: the block's text is what they read back, so
  an unsigned block is as good as their own (DeepSeek's own signature is the message id:
  NousResearch/hermes-agent PR 21048), and a foreign (Anthropic) signature is ignored;
* DeepSeek, Kimi and MiMo refuse a request whose assistant ``tool_use`` turn has no thinking
  block, with their own texts (DeepSeek: opencode issue 24791 and hermes-agent issue 22313;
  MiMo: hermes-agent issues 24884 and 26774; Kimi: hermes-agent issue 17057);
* ``kimi-k2.7-code`` refuses ``thinking.type: disabled`` (MoonshotAI/Kimi-K2 issue 141);
* MiniMax signs its blocks and takes them back as they are; it has no must-echo refusal;
* ``system`` messages among the turns are taken: Claude Code sends them for a model it does not
  know, and each of these vendors documents Claude Code on this endpoint.
"""

from __future__ import annotations

import re
import secrets
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .anthropic_rules import Invalid, blocks_of

__all__ = ["VENDORS", "Vendor", "check_vendor", "vendor_signature", "vendor_thinks"]


@dataclass(frozen=True, slots=True)
class Vendor:
    name: str
    """The personality (and route key) it plays."""
    echo: str = ""
    """Whose must-echo refusal a tool turn without a thinking block gets (empty: none)."""
    signature: str = "opaque"
    """What its thinking blocks are signed with: ``message_id`` (DeepSeek) or an ``opaque`` token."""
    no_off: str = ""
    """Model ids (regex) that refuse ``thinking.type: disabled``."""


VENDORS: Mapping[str, Vendor] = {v.name: v for v in (
    Vendor("deepseek-anthropic", echo="deepseek", signature="message_id"),
    Vendor("kimi-anthropic", echo="kimi", no_off=r"k2\.7-code"),
    Vendor("mimo-anthropic", echo="mimo"),
    Vendor("minimax-anthropic"),
)}


_PARAM = "Param Incorrect: "


def vendor_thinks(body: Mapping[str, Any]) -> bool:
    """Their models think unless told not to."""
    t = body.get("thinking")
    return not (isinstance(t, Mapping) and t.get("type") == "disabled")


def vendor_signature(vendor: Vendor, message_id: str) -> str:
    return message_id if vendor.signature == "message_id" else secrets.token_hex(32)


def _echo_refusal(vendor: Vendor, index: int) -> Invalid:
    """The vendor's own 400 for a tool turn that came back without its thinking."""
    if vendor.echo == "kimi":
        return Invalid(f"thinking is enabled but reasoning_content is missing in assistant tool call message at "
                       f"index {index}", kind="invalid_request_error")
    if vendor.echo == "mimo":
        return Invalid(f"{_PARAM}The reasoning_content in the thinking mode must be passed back to the API.")
    return Invalid("The `content[].thinking` in the thinking mode must be passed back to the API.")


def check_vendor(vendor: Vendor, body: Mapping[str, Any], model: str) -> None:
    """Raise :class:`Invalid` as the vendor would (after ``anthropic_rules.check_schema``)."""
    thinking = body.get("thinking")
    if vendor.no_off and isinstance(thinking, Mapping) and thinking.get("type") == "disabled" \
            and re.search(vendor.no_off, model.lower()):
        raise Invalid("invalid thinking: only type=enabled is allowed for this model")
    msgs: list[Mapping[str, Any]] = body["messages"]
    turns = [m for m in msgs if m.get("role") != "system"]
    for i, m in enumerate(turns):
        if m.get("role") != "user" or not i:
            continue
        prev = {b.get("id") for b in blocks_of(turns[i - 1]) if b.get("type") == "tool_use"}
        for j, b in enumerate(blocks_of(m)):
            if b.get("type") == "tool_result" and b.get("tool_use_id") not in prev:
                raise Invalid(f"messages.{i}.content.{j}: unexpected `tool_use_id` found in `tool_result` blocks: "
                              f"{b.get('tool_use_id')}. Each `tool_result` block must have a corresponding "
                              "`tool_use` block in the previous message.")
    if not vendor.echo or not vendor_thinks(body):
        return
    for i, m in enumerate(msgs):
        blocks = blocks_of(m)
        if m.get("role") == "assistant" and any(b.get("type") == "tool_use" for b in blocks) \
                and not any(b.get("type") == "thinking" and isinstance(b.get("thinking"), str) for b in blocks):
            raise _echo_refusal(vendor, i)


def error_body(vendor: Vendor, e: Invalid) -> dict[str, Any]:
    """The vendor's error envelope: DeepSeek, Kimi and MiMo answer in OpenAI's shape on this
    endpoint too (the bodies quoted in the issues above); MiniMax in Anthropic's."""
    if vendor.name == "minimax-anthropic":
        return {"type": "error", "error": {"type": e.kind, "message": str(e)}}
    head, sep, rest = str(e).partition(_PARAM)
    if vendor.echo == "mimo" and sep:  # users see "Param Incorrect" and, below it, the rule
        return {"error": {"message": head + sep.strip(": "), "type": e.kind, "param": rest, "code": "400"}}
    code = "invalid_request_error" if vendor.echo == "deepseek" else None
    return {"error": {"message": str(e), "type": e.kind, "param": None, "code": code}}
