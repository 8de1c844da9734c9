"""Provider and model names live in the tables: the issue-18 "must show", kept true by a test.

Every string literal of the product code (docstrings and comments aside) is searched for a route
key, a provider alias or a model family name. The tables (``routes.py``, ``models.py``), the
dialects (``wire/``), the emulators (``emulate/``) and the demo script may name them; anywhere
else a hit must be one of the vocabularies or messages listed in ``ALLOWED`` — the same list,
with its reasons, as docs/routes.md "Where names may still appear".
"""

from __future__ import annotations

import io
import re
import token
import tokenize
from pathlib import Path

from hermes.routing.routes import ROUTES

ROOT = Path(__file__).resolve().parent.parent / "hermes"
EXEMPT = ("routing/routes.py", "routing/models.py", "wire/", "emulate/", "cli/demo.py")
FAMILIES = {"claude", "gemini", "gpt", "deepseek", "kimi", "qwen", "glm", "grok", "moonshot", "openai", "google",
            "anthropic", "bedrock", "vertex", "azure", "aws", "mistral", "llama", "copilot", "openrouter"}
GENERIC = {"local", "generic", "custom", "custom-local", "openai-compatible"}
"""Row keys that are ordinary words, not provider names."""

WIRE_FAMILIES = "a wire family name (a row's `wire` value): per-wire dispatch and each API's turn rules"
BLOB_KINDS = "a stored blob kind (persisted vocabulary)"
AUTH = "a row's `auth` value (`aws` = SigV4 through botocore)"
MESSAGE = "user-facing text naming the API or its credentials"
ALLOWED: dict[tuple[str, str], str] = {
    ("replay/planner.py", "anthropic"): WIRE_FAMILIES,
    ("replay/planner.py", "bedrock"): WIRE_FAMILIES,
    ("replay/planner.py", "gemini"): WIRE_FAMILIES,
    ("replay/structure.py", "anthropic"): WIRE_FAMILIES,
    ("replay/structure.py", "bedrock"): WIRE_FAMILIES,
    ("replay/structure.py", "gemini"): WIRE_FAMILIES,
    ("replay/gemini.py", "gemini"): WIRE_FAMILIES,
    ("rejections/classifier.py", "anthropic"): BLOB_KINDS,
    ("replay/plan.py", "openrouter"): BLOB_KINDS,
    ("core/stream.py", "openrouter"): BLOB_KINDS,
    ("routing/toolids.py", "anthropic"): "a tool-id rule name (a row's `tool_ids` value)",
    ("routing/toolids.py", "mistral"): "a tool-id rule name (a row's `tool_ids` value)",
    ("routing/resolve.py", "aws"): AUTH,
    ("routing/resolve.py", "vertex"): "a row's `variant` value (the endpoint shape)",
    ("routing/resolve.py", "openai"): "a word too common in row names to tell look-alikes apart",
    ("config/keys.py", "aws"): AUTH,
    ("agent/runtime.py", "aws"): AUTH,
    ("agent/provider.py", "aws"): AUTH,
    ("cli/_common.py", "aws"): AUTH,
    ("cli/_common.py", "bedrock"): MESSAGE,
    ("cli/__init__.py", "openai"): MESSAGE,
    ("cli/chat.py", "bedrock"): MESSAGE,
    ("cli/chat.py", "aws"): MESSAGE,
    ("cli/proxy.py", "deepseek"): "an example in an error message",
    ("cli/routes.py", "anthropic"): WIRE_FAMILIES,
    ("cli/routes.py", "bedrock"): WIRE_FAMILIES,
    ("cli/keys_cmd.py", "aws"): AUTH,
    ("cli/keys_cmd.py", "bedrock"): MESSAGE,
    **{("cli/routes.py", n): "help text telling the two Vertex routes apart"
       for n in ("vertex", "anthropic-vertex", "claude", "gemini")},
    ("gateway/compat.py", "openai"): "the OpenAI-compatible facade's name",
    ("proxy/app.py", "openai"): MESSAGE,
    ("transport/http.py", "aws"): MESSAGE,
    ("transport/http.py", "bedrock"): MESSAGE,
    ("transport/aws.py", "aws"): MESSAGE,
    ("transport/aws.py", "bedrock"): "botocore's service name and its messages",
    ("proxy/responses_door.py", "codex"): "an error message naming the client whose way it suggests",
    ("cli/models.py", "bedrock"): WIRE_FAMILIES,
    ("cli/models.py", "aws"): AUTH,
    **{(f, n): "a front door: the API it speaks (its URL path, headers and messages)"
       for f, n in (("proxy/app.py", "anthropic"), ("proxy/app.py", "responses"), ("proxy/anthropic_app.py", "anthropic"),
                    ("proxy/anthropic_app.py", "responses"), ("proxy/anthropic_door.py", "anthropic"),
                    ("proxy/responses_door.py", "responses"), ("proxy/native_door.py", "responses"),
                    ("proxy/native_app.py", "responses"), ("proxy/responses_relay.py", "responses"))},
    ("proxy/native_door.py", "anthropic"): WIRE_FAMILIES,
}


def _names() -> set[str]:
    keys = {r.key for r in ROUTES} | {p for r in ROUTES for p in r.providers}
    return {n.lower() for n in keys | FAMILIES} - GENERIC


def _literals(src: str) -> list[tuple[int, str]]:
    """(line, text) of every string literal that is not a docstring."""
    toks = list(tokenize.generate_tokens(io.StringIO(src).readline))
    out = []
    for i, t in enumerate(toks):
        if t.type != token.STRING and t.type != getattr(token, "FSTRING_MIDDLE", -1):
            continue
        j = i - 1
        while j >= 0 and toks[j].type in (tokenize.NL, tokenize.COMMENT):
            j -= 1
        alone = (j < 0 or toks[j].type in (token.NEWLINE, token.INDENT, token.DEDENT)) \
            and i + 1 < len(toks) and toks[i + 1].type == token.NEWLINE
        if not alone:
            out.append((t.start[0], t.string))
    return out


def hits() -> list[tuple[str, int, str]]:
    pattern = re.compile(r"(?<![a-z0-9_])(" + "|".join(sorted(map(re.escape, _names()), key=len, reverse=True))
                         + r")(?![a-z0-9_])", re.I)
    out = []
    for f in sorted(ROOT.rglob("*.py")):
        rel = f.relative_to(ROOT).as_posix()
        if rel.startswith(EXEMPT):
            continue
        for line, text in _literals(f.read_text(encoding="utf-8")):
            out += [(rel, line, m.group(1).lower()) for m in pattern.finditer(text)]
    return out


def test_the_scan_finds_what_it_looks_for() -> None:
    assert ("routing/toolids.py", "mistral") in {(f, n) for f, _, n in hits()}  # a known, allowed hit
    assert "deepseek" in _names() and "claude" in _names() and "local" not in _names()


def test_no_provider_or_model_name_outside_the_tables_but_the_listed_ones() -> None:
    unexpected = sorted({f"{f}:{line}: {n!r}" for f, line, n in hits() if (f, n) not in ALLOWED})
    assert not unexpected, "provider/model names outside the tables (put the fact in a row, or list it " \
                           "with its reason here and in docs/routes.md):\n" + "\n".join(unexpected)
