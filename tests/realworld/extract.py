"""Build the real-world corpus from public VCR cassettes (sources and licences in SOURCES.md).

Not run by the tests, and its output is never committed (docs/realworld.md says why). One command,
given clones of pydantic/pydantic-ai (MIT) and charmbracelet/fantasy (Apache-2.0) — any checkout
that has the commits named below; the files are read at those commits through git, whatever is
checked out (a plain directory holding the files at that commit works too):

    python tests/realworld/extract.py PYDANTIC_AI FANTASY --out DIR     # needs PyYAML
    HERMES_REALWORLD_CASES=DIR python -m pytest tests/test_realworld.py

Which exchanges are kept is a rule, not a hand-made list, so a newer snapshot adds its cases by
itself: step *i* of a cassette is a case when

- the response to request *i* succeeded and has a shape our wires read (Anthropic Messages,
  Bedrock Converse, OpenAI Responses, Gemini, chat completions; whole JSON or SSE), holding only
  text, reasoning and function-tool-call parts (server-side tools, images and the like are not
  ours to replay) and at least one reasoning or tool-call part;
- request *i + 1* goes to the same kind of endpoint, sends an assistant turn back holding every
  tool call of response *i* (the client's replay of it), and the real provider accepted it;
- its host maps to one of our routes (``ROUTES`` below).

Of a case it keeps the response to request *i* exactly as recorded (the whole JSON or the SSE
text, headers and timings dropped), the model, the host, and from request *i + 1* only the
conversation (``messages`` / ``input`` / ``contents``).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import yaml

try:  # the C loader is ten times faster on the 130 MB of cassettes; the pure one gives the same data
    from yaml import CSafeLoader as Loader
except ImportError:  # pragma: no cover
    from yaml import SafeLoader as Loader  # type: ignore[assignment]

# (repository, commit, licence, cassette directory, directories skipped)
SOURCES = {
    "pydantic-ai": ("pydantic/pydantic-ai", "4fda38988f2939fa6ea9cdefcf120693e10ef491", "MIT",
                    "tests/models/cassettes",
                    ()),
    "fantasy": ("charmbracelet/fantasy", "f6d4d1e3022229bd6e77717416336bf50e1693ad", "Apache-2.0",
                "providertests/testdata", ()),
}
CONVERSATION = {"anthropic": "messages", "bedrock": "messages", "responses": "input",
                "gemini": "contents", "chat": "messages"}
# (endpoint kind, host suffix) → (family, route). First match wins; an unmapped host is skipped.
ROUTES: list[tuple[str, str, str, str]] = [
    ("anthropic", "api.anthropic.com", "anthropic", "anthropic"),
    ("bedrock", ".amazonaws.com", "bedrock", "bedrock"),
    ("gemini", "generativelanguage.googleapis.com", "gemini", "gemini"),
    ("gemini", "aiplatform.googleapis.com", "gemini-vertex", "gemini-vertex"),
    ("responses", "api.openai.com", "openai-responses", "openai-responses"),
    ("responses", ".openai.azure.com", "openai-responses", "openai-responses"),
    ("chat", "api.openai.com", "openai", "openai"),
    ("chat", ".openai.azure.com", "openai", "openai"),
    ("chat", "openrouter.ai", "openrouter", "openrouter"),
    ("chat", "ai-gateway.vercel.sh", "vercel", "vercel"),
    ("chat", "api.z.ai", "glm", "glm"),
    ("chat", "api.x.ai", "xai", "xai"),
    ("chat", "api.groq.com", "groq", "groq"),
    ("chat", "api.mistral.ai", "mistral", "mistral"),
    ("chat", "api.deepseek.com", "deepseek", "deepseek"),
    ("chat", "api.cerebras.ai", "cerebras", "cerebras"),
    ("chat", "ollama.com", "ollama-cloud", "ollama-cloud"),
    ("chat", "localhost:8080", "llamacpp", "llamacpp"),  # fantasy's llama.cpp server
    ("chat", "api.avian.io", "kimi", "generic"),          # Kimi K2.5 served by Avian
    ("chat", "router.huggingface.co", "huggingface", "generic"),
]


# ----------------------------------------------------------------------------- reading the sources


def cassettes(src: Path, commit: str, root: str) -> Iterator[tuple[str, str]]:
    """(path, text) of every cassette under ``root`` at ``commit`` — through git when ``src`` is
    a clone (so whatever is checked out does not matter), else from the files as they are."""
    git = ["git", "-C", str(src)]
    tree = subprocess.run([*git, "ls-tree", "-r", commit, "--", root], capture_output=True, text=True)
    if tree.returncode != 0:  # not a clone holding that commit: the files as they are
        for p in sorted((src / root).rglob("*.yaml")):
            yield p.relative_to(src).as_posix(), p.read_text()
        return
    blobs = [(ln.split("\t", 1)[1], ln.split()[2]) for ln in tree.stdout.splitlines()
             if ln.split()[1] == "blob" and ln.endswith(".yaml")]
    batch = subprocess.Popen([*git, "cat-file", "--batch"], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert batch.stdin and batch.stdout
    for path, sha in sorted(blobs):
        batch.stdin.write(f"{sha}\n".encode())
        batch.stdin.flush()
        header = batch.stdout.readline().split()
        if header[-1] == b"missing":  # a partial clone may lack a large media cassette: none is a case
            continue
        data = batch.stdout.read(int(header[2]) + 1)[:-1]
        yield path, data.decode()
    batch.stdin.close()
    batch.wait()


def _body(req: dict[str, Any]) -> Any:
    """A request's JSON body: pydantic-ai stores ``parsed_body`` or ``body``, fantasy ``body``."""
    if req.get("parsed_body") is not None:
        return req["parsed_body"]
    raw = req.get("body")
    raw = raw.get("string") if isinstance(raw, dict) else raw
    try:
        return json.loads(raw if isinstance(raw, str | bytes) else "")
    except ValueError:
        return None


def _ok(resp: dict[str, Any] | None) -> bool:
    """The recorded response is a success (pydantic-ai: ``status.code``, fantasy: ``code``)."""
    status = (resp or {}).get("status")
    return (status.get("code") if isinstance(status, dict) else (resp or {}).get("code", 200)) == 200


def _response(resp: dict[str, Any]) -> tuple[Any, str | None]:
    """(whole JSON, None) or (None, SSE text) as recorded; (None, None) when neither."""
    if not _ok(resp):
        return None, None
    if "parsed_body" in resp:
        return resp["parsed_body"], None
    body = resp.get("body")
    body = body.get("string") if isinstance(body, dict) else body
    if isinstance(body, bytes):
        try:
            body = body.decode()
        except UnicodeDecodeError:  # Bedrock's binary event stream: not a shape we read here
            return None, None
    if not isinstance(body, str):
        return None, None
    if body.lstrip().startswith(("data:", "event:", ":")):
        return None, body
    try:
        return json.loads(body), None
    except ValueError:
        return None, None


def _sse(text: str) -> list[dict[str, Any]]:
    out = []
    for line in text.splitlines():
        data = line[5:].strip() if line.startswith("data:") else ""
        if data and data != "[DONE]":
            try:
                obj = json.loads(data)
            except ValueError:
                continue
            if isinstance(obj, dict):
                out.append(obj)
    return out


# ----------------------------------------------------------------------------- the selection rule


def endpoint(uri: str) -> str | None:
    path = uri.split("?")[0]
    if "anthropic.com" in uri:
        return "anthropic"
    if "amazonaws.com" in uri and path.endswith("/converse"):
        return "bedrock"
    if "googleapis.com" in uri and "/openai/" not in path:
        return "gemini"
    if path.endswith("/responses"):
        return "responses"
    if path.endswith("/chat/completions"):
        return "chat"
    return None


def parts(kind: str, whole: Any, sse: str | None) -> set[str] | None:
    """What the response holds: {'reasoning', 'tools'}; None when it holds anything else."""
    found: set[str] = set()
    objs = _sse(sse) if sse is not None else [whole] if isinstance(whole, dict) else []
    if any(o.get("type") == "error" or o.get("error") for o in objs):  # e.g. a stream that ended in an error event
        return None
    if kind == "anthropic":
        blocks = ([o["content_block"] for o in objs if o.get("type") == "content_block_start"] if sse
                  else objs[0].get("content") or [] if objs else [])
        for b in blocks:
            t = b.get("type")
            if t not in ("text", "thinking", "redacted_thinking", "tool_use"):
                return None
            found |= {"thinking": {"reasoning"}, "redacted_thinking": {"reasoning"}, "tool_use": {"tools"}}.get(t, set())
    elif kind == "bedrock":
        for b in ((objs[0].get("output") or {}).get("message") or {}).get("content") or [] if objs else []:
            if set(b) - {"text", "reasoningContent", "toolUse"}:
                return None
            found |= {"reasoning"} if "reasoningContent" in b else {"tools"} if "toolUse" in b else set()
    elif kind == "responses":
        items = [o["item"] for o in objs if o.get("type") == "response.output_item.done"] if sse else \
            objs[0].get("output") or [] if objs else []
        for it in items:
            if it.get("type") not in ("reasoning", "function_call", "message"):
                return None
            found |= {"reasoning": {"reasoning"}, "function_call": {"tools"}}.get(it["type"], set())
    elif kind == "gemini":
        if any(c.get("finishReason") not in (None, "STOP", "MAX_TOKENS") for o in objs for c in o.get("candidates") or []):
            return None  # a failed generation (e.g. UNEXPECTED_TOOL_CALL): nothing was answered
        for o in objs:
            for p in ((o.get("candidates") or [{}])[0].get("content") or {}).get("parts") or []:
                if set(p) - {"text", "thought", "thoughtSignature", "functionCall"}:
                    return None
                found |= ({"reasoning"} if p.get("thought") or p.get("thoughtSignature") else set()) | \
                    ({"tools"} if "functionCall" in p else set())
    else:
        for o in objs:
            for ch in o.get("choices") or []:
                m = ch.get("delta" if sse else "message") or {}
                content = m.get("content")
                if m.get("reasoning_content") or m.get("reasoning") or m.get("reasoning_details") or \
                        (isinstance(content, str) and "<think>" in content):
                    found.add("reasoning")
                if m.get("tool_calls"):
                    found.add("tools")
    return found


def call_ids(kind: str, whole: Any, sse: str | None) -> set[str]:
    """The ids of the tool calls in a response (Gemini's calls have none); ``a|b``: either."""
    objs = _sse(sse) if sse is not None else [whole]
    if kind == "anthropic":
        blocks = [o.get("content_block") or {} for o in objs] if sse else objs[0].get("content") or []
        return {b["id"] for b in blocks if b.get("type") == "tool_use"}
    if kind == "bedrock":
        return {b["toolUse"]["toolUseId"] for b in objs[0]["output"]["message"]["content"] if "toolUse" in b}
    if kind == "responses":
        items = [o["item"] for o in objs if o.get("type") == "response.output_item.done"] if sse else objs[0]["output"]
        # a client may send the item id (fc_…) in call_id; the API pairs either with the output
        return {f'{it["call_id"]}|{it.get("id")}' for it in items if it.get("type") == "function_call"}
    if kind == "chat":
        return {c["id"] for o in objs for ch in o.get("choices") or []
                for c in (ch.get("delta" if sse else "message") or {}).get("tool_calls") or [] if c.get("id")}
    return set()


def sends_turn_back(kind: str, body: Any, ids: set[str] = frozenset()) -> bool:  # type: ignore[assignment]
    """Request *i + 1* replays an assistant turn, and with it every tool call of response *i*
    (a client that rewrote the turn into other calls did not replay this response)."""
    conv = body.get(CONVERSATION[kind]) if isinstance(body, dict) else None
    if not isinstance(conv, list):
        return False
    sent = json.dumps(conv)
    if any(all(json.dumps(alt) not in sent for alt in i.split("|")) for i in ids):
        return False
    if kind == "responses":
        return any(isinstance(it, dict) and (it.get("type") in ("reasoning", "function_call")
                                             or it.get("role") == "assistant") for it in conv)
    role = "model" if kind == "gemini" else "assistant"
    return any(isinstance(m, dict) and m.get("role") == role for m in conv)


def route_of(kind: str, host: str) -> tuple[str, str] | None:
    return next(((fam, route) for k, suffix, fam, route in ROUTES if k == kind and host.endswith(suffix)), None)


def model_of(uri: str, body: dict[str, Any]) -> str:
    if body.get("model"):
        return str(body["model"])
    if "/model/" in uri:  # Bedrock: /model/<id, may contain ':'>/converse
        return unquote(uri.split("/model/")[1].split("/")[0])
    return uri.split("/models/")[1].split(":")[0].split("/")[0]  # Gemini: /models/<id>:<verb>


def cases_in(source: str, path: str, text: str) -> Iterator[dict[str, Any]]:
    repo, commit, licence, root, _ = SOURCES[source]
    its = (yaml.load(text, Loader=Loader) or {}).get("interactions") or []
    stem = path.removeprefix(root + "/").removesuffix(".yaml")
    name = stem.split("/")[-1].removeprefix("test_") if source == "pydantic-ai" else \
        stem.removeprefix("Test").replace("/", "_")
    for i in range(len(its) - 1):
        req, resp, nreq = its[i].get("request"), its[i].get("response"), its[i + 1].get("request")
        if not (req and resp and nreq):
            continue
        uri, nuri = req.get("uri") or req.get("url") or "", nreq.get("uri") or nreq.get("url") or ""
        kind, host = endpoint(uri), uri.split("/")[2] if "//" in uri else ""
        mapped = route_of(kind, host) if kind else None
        if kind is None or not mapped or endpoint(nuri) != kind or not _ok(its[i + 1].get("response")):
            continue
        whole, sse = _response(resp)
        found = parts(kind, whole, sse) if (whole is not None or sse is not None) else None
        first, nxt = _body(req), _body(nreq)
        if not found or not isinstance(first, dict) or not sends_turn_back(kind, nxt, call_ids(kind, whole, sse)):
            continue
        family, route = mapped
        case: dict[str, Any] = {
            "id": f"{family}/{name}" + (f"@{i}" if i else ""),
            "source": {"repo": repo, "commit": commit, "licence": licence, "path": path,
                       "interactions": [i, i + 1]},
            "family": family, "route": route, "model": model_of(uri, first), "host": host,
        }
        if sse is not None:
            case["sse"] = sse
        else:
            case["response"] = whole
        case["next_request"] = {CONVERSATION[kind]: nxt[CONVERSATION[kind]]}
        yield case


def build(checkouts: dict[str, Path], out: Path) -> list[dict[str, Any]]:
    made: list[dict[str, Any]] = []
    for source, src in checkouts.items():
        _, commit, _, root, skipped = SOURCES[source]
        for path, text in cassettes(src, commit, root):
            if any(f"/{d}/" in f"/{path}" for d in skipped):
                continue
            made += cases_in(source, path, text)
    ids = Counter(c["id"] for c in made)
    clashes = [i for i, n in ids.items() if n > 1]
    if clashes:
        raise SystemExit(f"case ids clash: {clashes}")
    for case in made:
        dest = out / f"{case['id']}.json"
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_text(json.dumps(case, indent=1, ensure_ascii=False) + "\n")
    return made


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("pydantic_ai", type=Path, help="clone (or files at the pinned commit) of pydantic/pydantic-ai")
    ap.add_argument("fantasy", type=Path, help="clone (or files at the pinned commit) of charmbracelet/fantasy")
    ap.add_argument("--out", type=Path, default=Path(__file__).parent / "cases",
                    help="where the cases go (default: tests/realworld/cases, which git ignores)")
    ap.add_argument("--sources-table", action="store_true", help="print SOURCES.md's case table")
    args = ap.parse_args(argv)
    if args.out.exists() and any(args.out.glob("*/*.json")):
        for old in args.out.glob("*/*.json"):  # a rebuild starts clean: no case from an older rule survives
            old.unlink()
    made = build({"pydantic-ai": args.pydantic_ai, "fantasy": args.fantasy}, args.out)
    if args.sources_table:
        print("| case | family | model | response | cassette (interactions) |\n|---|---|---|---|---|")
        for c in sorted(made, key=lambda c: c["id"]):
            s = c["source"]
            print(f"| `{c['id']}` | {c['family']} | `{c['model']}` | {'SSE' if 'sse' in c else 'JSON'} | "
                  f"{s['repo'].split('/')[1]}: `{s['path'].split('/', 3 if 'pydantic' in s['repo'] else 2)[-1]}` "
                  f"({s['interactions'][0]}→{s['interactions'][1]}) |")
    per = Counter(c["family"] for c in made)
    streamed = sum(1 for c in made if "sse" in c)
    print(f"{len(made)} cases ({streamed} streamed) in {args.out}:",
          ", ".join(f"{f} {n}" for f, n in per.most_common()), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
