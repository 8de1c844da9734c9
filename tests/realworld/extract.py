"""Rebuild tests/realworld/cases/ from public VCR cassettes (licences in SOURCES.md).

Not run by the tests: it documents how the corpus was made. Usage, with checkouts of
pydantic/pydantic-ai (MIT) and charmbracelet/fantasy (Apache-2.0) at the commits named in
SOURCES.md:

    python tests/realworld/extract.py /path/to/pydantic-ai /path/to/fantasy   # needs PyYAML

For every listed (cassette, interaction i) it keeps the recorded response to request i — the
whole JSON or the SSE text, exactly as recorded, headers dropped — and, from request i + 1
(which the real provider accepted), only what the replay check compares: the model and the
conversation (``messages`` / ``input`` / ``contents``). Everything else (headers, tool schemas,
usage headers, the answers after i + 1) is cut.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import yaml

COMMIT = "4fda38988f2939fa6ea9cdefcf120693e10ef491"
ROOT = "tests/models/cassettes"
# (family, route, cassette dir, cassette name, interaction index of the recorded response)
CASES: list[tuple[str, str, str, str, int]] = [
    ("anthropic", "anthropic", "test_anthropic", "test_anthropic_tool_with_thinking", 0),
    ("anthropic", "anthropic", "test_anthropic", "test_anthropic_model_thinking_part", 0),
    ("anthropic", "anthropic", "test_anthropic", "test_anthropic_model_thinking_part_redacted", 0),
    ("bedrock", "bedrock", "test_bedrock", "test_bedrock_model_thinking_part_anthropic", 0),
    ("bedrock", "bedrock", "test_bedrock", "test_bedrock_model_thinking_part_redacted", 0),
    ("bedrock", "bedrock", "test_bedrock", "test_bedrock_anthropic_tool_with_thinking", 0),
    ("openai-responses", "openai-responses", "test_openai_responses", "test_openai_responses_thinking_with_tool_calls", 0),
    ("openai-responses", "openai-responses", "test_openai_responses", "test_openai_responses_model_thinking_part", 0),
    ("openai-responses", "openai-responses", "test_openai_responses",
     "test_openai_responses_requires_function_call_status_none", 0),
    ("openai-responses", "openai-responses", "test_openai_responses", "test_openai_responses_stream", 0),
    ("openai-responses", "openai-responses", "test_openai_responses", "test_openai_responses_phase_streamed_on_part_start", 0),
    ("openai-responses", "openai-responses", "test_openai_responses",
     "test_openai_responses_model_simple_response_with_tool_call", 0),
    ("openai-responses", "openai-responses", "test_openai_responses", "test_tool_output", 0),
    ("gemini", "gemini", "test_google", "test_google_model_thinking_part", 0),
    ("gemini", "gemini", "test_google", "test_google_instructions_only_with_tool_calls", 0),
    ("gemini", "gemini", "test_google", "test_google_instructions_only_with_tool_calls", 1),
    ("gemini", "gemini", "test_google", "test_google_streaming_tool_call_thought_signature", 0),
    ("gemini", "gemini", "test_google", "test_google_text_output_function", 0),
    ("gemini", "gemini", "test_google", "test_google_prompted_output_with_tools", 0),
    ("gemini", "gemini", "test_google", "test_google_model_retry", 0),
    ("openrouter", "openrouter", "test_openrouter", "test_openrouter_google_nested_schema", 0),
    ("deepseek", "deepseek", "test_deepseek", "test_deepseek_deferred_capability_with_thinking", 0),
    ("deepseek", "deepseek", "test_deepseek", "test_deepseek_deferred_capability_with_thinking", 1),
    ("glm", "glm", "test_zai", "test_zai_preserved_thinking_round_trip", 0),
    ("groq", "groq", "test_groq", "test_groq_model_thinking_part", 0),
    ("cerebras", "cerebras", "test_cerebras", "test_cerebras_thinking_part_survives_multiturn", 0),
    ("cerebras", "cerebras", "test_cerebras", "test_cerebras_zai_reasoning_replayed_as_think_tags", 0),
]
CONVERSATION = ("messages", "input", "contents")

FANTASY_COMMIT = "f6d4d1e3022229bd6e77717416336bf50e1693ad"
FANTASY_ROOT = "providertests/testdata"
# (family, route, cassette path under FANTASY_ROOT, interaction index); both JSON and SSE runs
FANTASY: list[tuple[str, str, str, int]] = [
    (fam, route, f"{d}/{kind}.yaml", 0)
    for fam, route, d in (
        ("vercel", "vercel", "TestVercelThinking/gpt-5"),
        ("vercel", "vercel", "TestVercelThinking/gemini-3-pro-preview"),
        ("vercel", "vercel", "TestVercelThinking/claude-sonnet-4"),
        ("vercel", "vercel", "TestVercelThinking/claude-sonnet-4-sig"),
        ("openrouter", "openrouter", "TestOpenRouterThinking/anthropic"),
        ("anthropic", "anthropic", "TestAnthropicThinking/claude-sonnet-4"),
        ("gemini", "gemini", "TestGoogleThinking/gemini-3-pro-preview"),
        ("gemini", "gemini", "TestGoogleThinking/gemini-2.5-pro"),
        ("openai-responses", "openai-responses", "TestOpenAIResponsesWithSummaryThinking/openai-gpt-5"),
        ("openai-responses", "openai-responses", "TestOpenAIResponsesWithSummaryThinking/openai-o4-mini"),
        ("glm", "glm", "TestOpenAICompatibleThinking/zai-glm-4-7-flash"),
        ("xai", "xai", "TestOpenAICompatibleThinking/xai-grok-3-mini"),
        ("llamacpp", "llamacpp", "TestOpenAICompatibleThinking/llama-cpp-gpt-oss"),
    )
    for kind in ("thinking", "thinking-streaming")
] + [("kimi", "generic", "TestOpenAICompatibleThinking/avian-kimi/thinking-streaming.yaml", 0)]


def _request(req: dict[str, Any]) -> dict[str, Any]:
    body = req.get("parsed_body")
    if body is None:
        raw = req.get("body")
        body = json.loads(raw if isinstance(raw, str) else raw.decode())
    return body


def _model(req: dict[str, Any], body: dict[str, Any]) -> str:
    if body.get("model"):
        return str(body["model"])
    uri = req["uri"]  # Gemini and Bedrock name the model in the URL
    from urllib.parse import unquote

    if "/model/" in uri:  # Bedrock: /model/<id, may contain ':'>/converse
        return unquote(uri.split("/model/")[1].split("/")[0])
    return uri.split("/models/")[1].split(":")[0].split("/")[0]  # Gemini: /models/<id>:<verb>


def extract(repo: Path, out: Path) -> int:
    n = 0
    for family, route, folder, name, i in CASES:
        data = yaml.safe_load((repo / ROOT / folder / f"{name}.yaml").read_text())
        its = data["interactions"]
        req, resp, nxt = its[i]["request"], its[i]["response"], _request(its[i + 1]["request"])
        first = _request(req)
        case: dict[str, Any] = {
            "id": f"{family}/{name.removeprefix('test_')}" + (f"@{i}" if i else ""),
            "source": {"repo": "pydantic/pydantic-ai", "commit": COMMIT, "licence": "MIT",
                       "path": f"{ROOT}/{folder}/{name}.yaml", "interactions": [i, i + 1]},
            "family": family, "route": route, "model": _model(req, first),
            "host": req["uri"].split("/")[2],
        }
        if "parsed_body" in resp:
            case["response"] = resp["parsed_body"]
        else:
            body = resp["body"]["string"]
            case["sse"] = body if isinstance(body, str) else body.decode()
        _write(case, nxt, out / family / f"{name.removeprefix('test_')}{f'@{i}' if i else ''}.json")
        n += 1
    return n


def _write(case: dict[str, Any], nxt: dict[str, Any], dest: Path) -> None:
    """Keep only the next request's conversation, and write the case."""
    key = next(k for k in CONVERSATION if k in nxt)
    case["next_request"] = {key: nxt[key]}
    dest.parent.mkdir(parents=True, exist_ok=True)
    dest.write_text(json.dumps(case, indent=1, ensure_ascii=False) + "\n")


def extract_fantasy(repo: Path, out: Path) -> int:
    """charmbracelet/fantasy keeps go-vcr v2 cassettes: bodies are raw strings, the URL is ``url``."""
    n = 0
    for family, route, path, i in FANTASY:
        its = yaml.safe_load((repo / FANTASY_ROOT / path).read_text())["interactions"]
        req, resp = its[i]["request"], its[i]["response"]
        first, nxt = json.loads(req["body"]), json.loads(its[i + 1]["request"]["body"])
        name = path.removesuffix(".yaml").split("/", 1)[1].replace("/", "_")
        case: dict[str, Any] = {
            "id": f"{family}/{name}",
            "source": {"repo": "charmbracelet/fantasy", "commit": FANTASY_COMMIT, "licence": "Apache-2.0",
                       "path": f"{FANTASY_ROOT}/{path}", "interactions": [i, i + 1]},
            "family": family, "route": route, "model": _model({"uri": req["url"]}, first),
            "host": req["url"].split("/")[2],
        }
        body = resp["body"]
        if body.lstrip().startswith(("data:", "event:", ":")):
            case["sse"] = body
        else:
            case["response"] = json.loads(body)
        _write(case, nxt, out / family / f"{name}.json")
        n += 1
    return n


if __name__ == "__main__":
    cases = Path(__file__).parent / "cases"
    print(extract(Path(sys.argv[1]), cases) + extract_fantasy(Path(sys.argv[2]), cases), "cases written")
