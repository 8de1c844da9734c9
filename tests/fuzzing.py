"""Fuzz targets and mutators shared by the quick profile (``tests/test_fuzz.py``) and the long one
(``bench/fuzz.py``), so both hammer exactly the same decoder paths.

Contract under test: every decoder turns malformed input into a ``HermesError`` subclass, never
another exception and never a hang. A *target* is one decoder path fed raw bytes, the way the
bytes arrive in production:

* ``<wire>.sse`` — response bytes → httpx's text decoder → ``provider.sse_batches`` → the
  wire's streaming decoder (the one ``provider.complete`` picks) → ``Accumulator.result()``;
* ``<wire>.json`` — a whole body → ``provider.decode_body`` → ``from_wire`` → fold;
* ``bedrock.frames`` — event-stream bytes → botocore's ``EventStream`` (the real buffer and
  parser) → ``transport_aws.stream_deltas`` → fold; ``bedrock.json`` goes through botocore's
  REST-JSON parser first, as ``client.converse`` does;
* ``history`` (``messages.load_jsonl``), ``routes.toml`` (``resolve.load_table``) and
  ``config.toml`` (``config.load_config``).

A folded turn must also survive ``messages.dumps``/``loads``: a decoder that accepts garbage
into a stored turn would only move the crash to the next resume.

Seeds are real: :func:`capture_corpus` asks the emulators (over loopback HTTP) for streamed and
whole answers of every wire and keeps the raw bytes. Mutators take a ``random.Random`` so the
hypothesis profile (``st.randoms``) and the long random profile share them.
"""

from __future__ import annotations

import contextlib
import math
import os
import random
import secrets
import signal
import tempfile
import threading
import time
import traceback
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from hermes.core.errors import HermesError

__all__ = [
    "SEED",
    "SEED_VAR",
    "STATIC_SEEDS",
    "TARGETS",
    "Hang",
    "Outcome",
    "Target",
    "capture_corpus",
    "check",
    "mutate_frames",
    "mutate_json",
    "mutate_sse",
    "mutate_toml",
    "other_type",
    "report",
    "retype_doc",
    "retype_frames",
    "retype_json",
    "retype_line",
    "retype_sse",
    "shrink",
    "time_bound",
    "where",
]

LIMIT_S = 5.0
"""Per-case time bound: anything slower is reported as a hang."""

SEED_VAR = "HERMES_FUZZ_SEED"
SEED: int = int(os.environ.get(SEED_VAR) or secrets.randbelow(2**31))
"""This run's seed: fresh per run (so code added since the last run is fuzzed too) unless
``HERMES_FUZZ_SEED`` replays one. Printed in the pytest header and in every failure."""


class Hang(Exception):
    """A decoder ran past the per-case time bound."""


# ----------------------------------------------------------------------------- time bound


def time_bound(fn: Callable[[], None], seconds: float = LIMIT_S) -> None:
    """Run ``fn``; raise ``Hang`` if it takes longer than ``seconds``.

    In the main thread a real-time itimer interrupts the call itself (so a genuine infinite
    loop is stopped); elsewhere a watchdog thread can only report the hang afterwards."""
    if threading.current_thread() is threading.main_thread() and hasattr(signal, "setitimer"):
        def _alarm(signum: int, frame: Any) -> None:
            raise Hang(f"no answer within {seconds:g}s")

        old = signal.signal(signal.SIGALRM, _alarm)
        signal.setitimer(signal.ITIMER_REAL, seconds)
        try:
            fn()
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, old)
        return
    done = threading.Event()
    box: list[BaseException] = []

    def _run() -> None:
        try:
            fn()
        except BaseException as e:
            box.append(e)
        finally:
            done.set()

    threading.Thread(target=_run, daemon=True).start()
    if not done.wait(seconds):
        raise Hang(f"no answer within {seconds:g}s")
    if box:
        raise box[0]


@dataclass(frozen=True, slots=True)
class Outcome:
    """``ok``: parsed; ``refused``: a HermesError; ``unexpected``: anything else (a bug)."""

    kind: str
    error: BaseException | None = None


def check(target: Target, data: bytes, seconds: float = LIMIT_S) -> Outcome:
    """Run one case and classify how it ended."""
    try:
        time_bound(lambda: target.run(data), seconds)
    except HermesError as e:
        return Outcome("refused", e)
    except Exception as e:
        return Outcome("unexpected", e)
    return Outcome("ok")


def where(e: BaseException) -> str:
    """``file:line`` where ``e`` was raised (the failure site a report groups by)."""
    tb = traceback.extract_tb(e.__traceback__)
    return f"{Path(tb[-1].filename).name}:{tb[-1].lineno}" if tb else "?"


def shrink(target: Target, data: bytes, outcome: Outcome, budget_s: float = 20.0) -> bytes:
    """A shorter input that still fails with the same exception type (greedy chunk deletion)."""
    want = type(outcome.error)
    deadline = time.monotonic() + budget_s
    chunk = max(1, len(data) // 2)
    while chunk >= 1 and time.monotonic() < deadline:
        i, changed = 0, False
        while i < len(data) and time.monotonic() < deadline:
            cand = data[:i] + data[i + chunk:]
            o = check(target, cand, seconds=2.0)
            if o.kind == "unexpected" and type(o.error) is want:
                data, changed = cand, True
            else:
                i += chunk
        if not changed:
            chunk //= 2
    return data


def report(target: Target, data: bytes, outcome: Outcome, seed: int, shrink_s: float = 20.0) -> str:
    """What a failure prints: the exception, its site, a shrunk reproducer and the replay seed."""
    small = shrink(target, data, outcome, shrink_s)
    e = outcome.error
    return (f"UNEXPECTED in {target.name}: {type(e).__name__} at {where(e) if e else '?'}: {str(e)[:200]}\n"
            f"  reproducer ({len(small)} bytes): fuzzing.TARGETS[{TARGETS.index(target)}].run({small[:600]!r})\n"
            f"  replay the run: {SEED_VAR}={seed}")


# ----------------------------------------------------------------------------- JSON mutation


class _Raw(str):
    """Text spliced verbatim into serialized JSON (NaN, 1e999, deep nesting, bad escapes)."""


class _Dup(dict[str, Any]):
    """An object whose key ``dup`` is written twice (first with ``first``) in the raw text."""

    dup: str = ""
    first: Any = None


_HUGE_STR = "x" * 1_000_000


def _odd_value(rnd: random.Random) -> Any:
    choices: list[Callable[[], Any]] = [
        lambda: None, lambda: True, lambda: False, lambda: 0, lambda: -1, lambda: 2**63,
        lambda: rnd.randint(-(10**6), 10**6), lambda: 1.5, lambda: "", lambda: "text",
        lambda: [], lambda: {}, lambda: [1, "a", None], lambda: {"type": "text", "text": 1},
        lambda: _Raw("NaN"), lambda: _Raw("Infinity"), lambda: _Raw("-Infinity"),
        lambda: _Raw("1e999"), lambda: _Raw("9" * 5000), lambda: _Raw("-" + "9" * 400 + ".5e-99999"),
        lambda: _HUGE_STR, lambda: "\ud800", lambda: _Raw('"\\ud800"'), lambda: _Raw('"\\u00"'),
        lambda: _Raw("[" * 10_000 + "]" * 10_000), lambda: _Raw('{"a":' * 10_000 + "1" + "}" * 10_000),
        lambda: _Raw("[" * 200 + "]" * 200), lambda: "\x00\x1f<think></think>",
    ]
    return rnd.choice(choices)()


def _paths(obj: Any, prefix: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    yield prefix
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield from _paths(v, (*prefix, k))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            yield from _paths(v, (*prefix, i))


def _get(obj: Any, path: Sequence[Any]) -> Any:
    for p in path:
        obj = obj[p]
    return obj


def _mutate_tree(obj: Any, rnd: random.Random) -> Any:
    """One structural mutation at a random JSON path (type swap, drop, duplicate, wrap)."""
    paths = list(_paths(obj))
    path = rnd.choice(paths)
    op = rnd.randrange(6)
    if not path:
        return _odd_value(rnd) if op < 2 else [obj] if op == 2 else obj
    parent, last = _get(obj, path[:-1]), path[-1]
    if op in (0, 1, 2):  # replace with another type / odd token
        parent[last] = _odd_value(rnd)
    elif op == 3:  # drop the key / element
        del parent[last]
    elif op == 4 and isinstance(parent, dict):  # duplicate key in raw text
        dup = _Dup(parent)
        dup.dup, dup.first = str(last), _odd_value(rnd)
        if len(path) == 1:
            return dup
        _get(obj, path[:-2])[path[-2]] = dup
    else:  # wrap the value one level deeper / in a list
        parent[last] = [parent[last]] if rnd.random() < 0.5 else {"value": parent[last]}
    return obj


def _dump(obj: Any) -> bytes:
    if isinstance(obj, _Raw):
        return obj.encode()
    if isinstance(obj, _Dup):
        items = [orjson.dumps(obj.dup) + b":" + _dump(obj.first)]
        items += [orjson.dumps(str(k)) + b":" + _dump(v) for k, v in obj.items()]
        return b"{" + b",".join(items) + b"}"
    if isinstance(obj, dict):
        return b"{" + b",".join(orjson.dumps(str(k)) + b":" + _dump(v) for k, v in obj.items()) + b"}"
    if isinstance(obj, list):
        return b"[" + b",".join(_dump(v) for v in obj) + b"]"
    if isinstance(obj, str):
        try:
            return orjson.dumps(obj)
        except TypeError:  # lone surrogate: written as raw (invalid) UTF-8 bytes
            return b'"' + obj.encode("utf-8", "surrogatepass") + b'"'
    if isinstance(obj, float) and not math.isfinite(obj):
        return b"NaN"
    if isinstance(obj, int) and abs(obj) >= 2**64:
        return str(obj).encode()
    return orjson.dumps(obj)


_BAD_BYTES = (b"\xff", b"\xfe\xff", b"\xc3", b"\xed\xa0\x80", b"\xf4\x90\x80\x80", b"\x00", b"\xc0\xaf")


def _byte_noise(data: bytes, rnd: random.Random) -> bytes:
    """Byte-level damage: truncation, invalid UTF-8, bit flips, deleted or repeated slices."""
    if not data:
        return rnd.choice(_BAD_BYTES)
    op = rnd.randrange(5)
    at = rnd.randrange(len(data) + 1)
    if op == 0:
        return data[:at]
    if op == 1:
        return data[:at] + rnd.choice(_BAD_BYTES) + data[at:]
    if op == 2:
        b = bytearray(data)
        for _ in range(rnd.randint(1, 4)):
            b[rnd.randrange(len(b))] ^= 1 << rnd.randrange(8)
        return bytes(b)
    if op == 3:
        return data[:at] + data[at + rnd.randint(1, 16):]
    return data[:at] + data[at:at + rnd.randint(1, 64)] * rnd.randint(2, 4) + data[at:]


def mutate_json(seed: bytes, rnd: random.Random) -> bytes:
    """A mutated JSON document: 1-3 structural mutations, sometimes byte damage on top."""
    try:
        obj = orjson.loads(seed)
    except orjson.JSONDecodeError:
        return _byte_noise(seed, rnd)
    for _ in range(rnd.randint(1, 3)):
        obj = _mutate_tree(obj, rnd)
    out = _dump(obj)
    return _byte_noise(out, rnd) if rnd.random() < 0.25 else out


# ----------------------------------------------------------------------------- shape mutation
#
# The structural mutators above damage documents at random; these keep every document well formed
# and valid-shaped except for one value: the value at one key the decoder reads (every key of the
# real seed, plus the seed's own key names inserted elsewhere) becomes a value of another JSON
# type. That is the malformation a provider or gateway actually ships (a dict where text belongs)
# and the one byte damage almost never produces.

_JSON_TYPES: tuple[tuple[str, Callable[[random.Random], Any]], ...] = (
    ("null", lambda r: None),
    ("bool", lambda r: r.random() < 0.5),
    ("int", lambda r: r.choice([0, 1, -1, 2**53, r.randint(-999, 999)])),
    ("float", lambda r: r.choice([0.5, -1e300, 1e-9])),
    ("str", lambda r: r.choice(["", "x", "0", "text", "\u0000"])),
    ("list", lambda r: r.choice([[], [""], [{}], [1, None]])),
    ("dict", lambda r: r.choice([{}, {"": ""}, {"type": {}}, {"index": []}])),
)


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    return {bool: "bool", int: "int", float: "float", str: "str", list: "list", dict: "dict"}.get(type(value), "?")


def other_type(value: Any, rnd: random.Random) -> Any:
    """A value of a JSON type other than ``value``'s."""
    kind = _json_type(value)
    return rnd.choice([make for name, make in _JSON_TYPES if name != kind])(rnd)


def _keys(obj: Any) -> set[str]:
    if isinstance(obj, dict):
        return set(obj).union(*(_keys(v) for v in obj.values()))
    if isinstance(obj, list):
        return set().union(*(_keys(v) for v in obj))
    return set()


def retype_doc(obj: Any, rnd: random.Random) -> Any:
    """``obj`` with one value replaced by a value of another JSON type, or (now and then) one of
    the document's own key names added to another object with an ill-typed value."""
    paths = [p for p in _paths(obj) if p]
    dicts = [p for p in _paths(obj) if isinstance(_get(obj, p), dict)]
    if not paths or (dicts and rnd.random() < 0.2):
        if not dicts:
            return other_type(obj, rnd)
        names = sorted(_keys(obj)) or ["type"]
        _get(obj, rnd.choice(dicts))[rnd.choice(names)] = other_type(None, rnd)
        return obj
    path = rnd.choice(paths)
    parent = _get(obj, path[:-1])
    parent[path[-1]] = other_type(parent[path[-1]], rnd)
    return obj


def retype_json(seed: bytes, rnd: random.Random) -> bytes:
    """A whole JSON document with one ill-typed value (see ``retype_doc``)."""
    try:
        return orjson.dumps(retype_doc(orjson.loads(seed), rnd))
    except orjson.JSONDecodeError:
        return _byte_noise(seed, rnd)


def retype_sse(seed: bytes, rnd: random.Random) -> bytes:
    """An SSE stream whose ``data:`` JSON events are intact but one, which has one ill-typed value."""
    events = _sse_events(seed)
    spots = [(i, j) for i, ev in enumerate(events) for j, line in enumerate(ev)
             if line.startswith(b"data:") and line[5:].strip()[:1] in (b"{", b"[")]
    if not spots:
        return mutate_sse(seed, rnd)
    i, j = rnd.choice(spots)
    events[i][j] = b"data: " + retype_json(events[i][j][5:].strip(), rnd)
    return b"\n\n".join(b"\n".join(ev) for ev in events) + b"\n\n"


def retype_frames(seed: bytes, rnd: random.Random) -> bytes:
    """AWS event-stream bytes, valid frames and CRCs, one frame's JSON payload ill-typed."""
    from hermes.emulate.bedrock import encode_frame

    frames = _frames(seed)
    if not frames:
        return mutate_frames(seed, rnd)
    i = rnd.randrange(len(frames))
    kind = _frame_header(frames[i], b":event-type") or "contentBlockDelta"
    payload = frames[i][12 + int.from_bytes(frames[i][4:8], "big"):-4]
    headers = [(":event-type", kind), (":content-type", "application/json"), (":message-type", "event")]
    frames[i] = encode_frame(headers, retype_json(payload, rnd))
    return b"".join(frames)


def retype_line(seed: bytes, rnd: random.Random) -> bytes:
    """A JSONL document (history) with one record ill-typed."""
    lines = seed.split(b"\n")
    i = rnd.randrange(len(lines))
    lines[i] = retype_json(lines[i], rnd)
    return b"\n".join(lines)


# ----------------------------------------------------------------------------- SSE mutation


def _sse_events(seed: bytes) -> list[list[bytes]]:
    events, cur = [], []
    for line in seed.split(b"\n"):
        if line.strip():
            cur.append(line)
        elif cur:
            events.append(cur)
            cur = []
    if cur:
        events.append(cur)
    return events


def mutate_sse(seed: bytes, rnd: random.Random) -> bytes:
    """A mutated SSE stream: damaged ``data:`` JSON, dropped / repeated / reordered events,
    odd framing lines (CR, comments, bare field names), truncation and byte damage."""
    events = _sse_events(seed)
    for _ in range(rnd.randint(1, 3)):
        if not events:
            break
        i = rnd.randrange(len(events))
        op = rnd.randrange(8)
        if op <= 2:  # mutate one event's JSON data
            ev = events[i]
            for j, line in enumerate(ev):
                if line.startswith(b"data:"):
                    ev[j] = b"data: " + mutate_json(line[5:].strip(), rnd).replace(b"\n", b" ")
        elif op == 3:
            del events[i]
        elif op == 4:
            events.insert(i, list(events[rnd.randrange(len(events))]))
        elif op == 5:
            events = events[:i]  # the stream breaks off
        elif op == 6:
            odd = rnd.choice([b": keep-alive", b"data", b"event", b"event: error", b"retry: 1",
                              b"data: [DONE]", b"id: 7", b"data:", b"\r", b"event:\x00"])
            events[i] = [*events[i][:1], odd, *events[i][1:]]
        else:
            events[i] = [b"event: error", b'data: {"type":"error","error":{"type":"overloaded_error"}}']
    out = b"\n\n".join(b"\n".join(ev) for ev in events) + b"\n\n"
    if rnd.random() < 0.3:
        out = out.replace(b"\n", b"\r\n") if rnd.random() < 0.3 else _byte_noise(out, rnd)
    return out


# ----------------------------------------------------------------------------- event-stream mutation


def _frames(seed: bytes) -> list[bytes]:
    out, at = [], 0
    while at + 4 <= len(seed):
        n = int.from_bytes(seed[at:at + 4], "big")
        out.append(seed[at:at + n])
        at += n
    return out


def mutate_frames(seed: bytes, rnd: random.Random) -> bytes:
    """Mutated AWS event-stream bytes: re-encoded frames with damaged JSON or headers (valid
    CRCs, so the payload reaches the JSON parser and the wire), bit flips, truncation, noise."""
    from hermes.emulate.bedrock import encode_frame

    frames = _frames(seed)
    op = rnd.randrange(6)
    if op <= 2 and frames:
        i = rnd.randrange(len(frames))
        kind = _frame_header(frames[i], b":event-type") or "contentBlockDelta"
        payload = frames[i][12 + int.from_bytes(frames[i][4:8], "big"):-4]
        headers = [(":event-type", kind), (":content-type", "application/json"), (":message-type", "event")]
        if op == 2:
            headers = rnd.choice([
                [(":event-type", rnd.choice(["bogus", "contentBlockStart", "messageStop", "metadata"])),
                 (":message-type", "event")],
                [(":exception-type", rnd.choice(["modelStreamErrorException", "throttlingException", "bogus"])),
                 (":message-type", "exception")],
                [(":message-type", "error"), (":error-code", "Boom"), (":error-message", "bad")],
                [(":message-type", "bogus")],
                [],
            ])
        frames[i] = encode_frame(headers, mutate_json(payload, rnd))
        return b"".join(frames)
    if op == 3 and frames:
        frames.insert(rnd.randrange(len(frames) + 1), frames[rnd.randrange(len(frames))])
        return b"".join(frames[: rnd.randint(0, len(frames))])
    if op == 4:
        return rnd.randbytes(rnd.randint(0, 64)) if rnd.random() < 0.3 else seed[: rnd.randrange(len(seed) + 1)]
    return _byte_noise(seed, rnd)


def _frame_header(frame: bytes, name: bytes) -> str | None:
    at = frame.find(name)
    if at < 0:
        return None
    at += len(name) + 1  # type byte 7 (string)
    n = int.from_bytes(frame[at:at + 2], "big")
    return frame[at + 2:at + 2 + n].decode("utf-8", "replace")


# ----------------------------------------------------------------------------- TOML mutation


def mutate_toml(seed: bytes, rnd: random.Random) -> bytes:
    """Mutated TOML: value type swaps, duplicated / dropped lines, bracket damage, byte noise."""
    lines = seed.decode("utf-8", "replace").splitlines()
    for _ in range(rnd.randint(1, 3)):
        if not lines:
            lines = [""]
        i = rnd.randrange(len(lines))
        op = rnd.randrange(6)
        line = lines[i]
        if op <= 1 and "=" in line:
            k, _, _ = line.partition("=")
            v = rnd.choice(['1', '-5', 'true', '"x"', '""', "[]", '[1, "a"]', "{}", '{ a = 1 }', "nan", "inf",
                            "1979-05-27T07:32:00Z", '"""\nmulti\n"""', "9" * 400, '"\\ud800"', '[[1]]',
                            '{ pattern = 1 }', '[{ pattern = "x", switches = 3 }]', '[{ pattern = "x", policy = 3 }]'])
            lines[i] = f"{k}= {v}"
        elif op == 2:
            lines.insert(i, line)
        elif op == 3:
            del lines[i]
        elif op == 4:
            lines.insert(i, rnd.choice(["[[route]]", "[route]", "[aliases]", "[gateway]", "[aliases.x]",
                                        "model_rules = 3", "[[route.model_rules]]", "switches = { a = { b = 1 } }",
                                        "x = 1", "[" * 500, "a" + ".a" * 2000 + " = 1"]))
        else:
            lines[i] = line[: rnd.randrange(len(line) + 1)]
    out = "\n".join(lines).encode("utf-8", "surrogatepass")
    return _byte_noise(out, rnd) if rnd.random() < 0.2 else out


# ----------------------------------------------------------------------------- targets


@dataclass(frozen=True, slots=True)
class Target:
    """One decoder path: ``run(bytes)`` must return or raise ``HermesError``."""

    name: str
    seeds: str
    """Key into the corpus from :func:`capture_corpus`."""
    mutate: Callable[[bytes, random.Random], bytes]
    run: Callable[[bytes], None]
    retype: Callable[[bytes, random.Random], bytes] | None = None
    """The shape mutator for this input format (one ill-typed value in a valid-shaped input)."""

    def case(self, corpus: Mapping[str, Sequence[bytes]], rnd: random.Random) -> bytes:
        """One generated input: a mutated or retyped seed, now and then plain random bytes."""
        roll = rnd.random()
        if roll < 0.03:
            return rnd.randbytes(rnd.randint(0, 256))
        seed = rnd.choice(list(corpus[self.seeds]))
        if self.retype is not None and roll < 0.4:
            return self.retype(seed, rnd)
        return self.mutate(seed, rnd)


def _route(wire: str) -> Any:
    from hermes.routing.resolve import resolve

    name = {"openai_chat": "minimax", "anthropic": "anthropic", "gemini": "gemini",
            "openai_responses": "openai-responses", "bedrock": "bedrock"}[wire]
    model = {"openai_chat": "MiniMax-M2", "anthropic": "claude-opus-4-6", "gemini": "gemini-3-pro-preview",
             "openai_responses": "gpt-5", "bedrock": "us.anthropic.claude-sonnet-4-5-20250929-v1:0"}[wire]
    return resolve(name, "http://127.0.0.1:9/v1", model)


def _finish(resolved: Any, deltas_iter: Callable[[Callable[[Sequence[Any]], None]], None]) -> None:
    """Fold what a decoder emits, take the result and check it survives the history JSON form."""
    from hermes.core import messages
    from hermes.core.stream import Accumulator

    acc = Accumulator(resolved.key)

    def feed(ds: Sequence[Any]) -> None:
        for d in ds:
            acc.feed(d)

    deltas_iter(feed)
    msg = acc.result().message
    try:  # a HistoryError here is a bug (an accepted turn that cannot be reloaded), not a refusal
        back = messages.loads(messages.dumps(msg))
    except HermesError as e:
        raise AssertionError(f"folded turn cannot be reloaded: {e}") from None
    if back != msg:
        raise AssertionError("folded turn does not survive dumps/loads")


def _sse_target(wire: str) -> Callable[[bytes], None]:
    def run(data: bytes) -> None:
        import httpx

        from hermes.agent.provider import sse_batches
        from hermes.wire import get_wire

        resolved = _route(wire)
        decode = get_wire(wire).decoder(resolved).decode_events
        chunks = [data[i:i + 97] for i in range(0, len(data), 97)]
        response = httpx.Response(200, headers={"content-type": "text/event-stream"}, content=iter(chunks))

        def pump(feed: Callable[[Sequence[Any]], None]) -> None:
            for batch in sse_batches(response.iter_text()):
                feed(decode(batch))

        _finish(resolved, pump)

    return run


def _json_target(wire: str) -> Callable[[bytes], None]:
    def run(data: bytes) -> None:
        from hermes.agent.provider import decode_body
        from hermes.wire import get_wire

        resolved = _route(wire)
        dec = get_wire(wire).decoder(resolved)
        _finish(resolved, lambda feed: feed(dec.from_wire(decode_body(data, resolved.route.key))))

    return run


_BOTO: dict[str, Any] = {}


def _botocore() -> tuple[Any, Any]:
    """The ConverseStream event shape and Converse output shape, from botocore's own model."""
    if not _BOTO:
        import botocore.session

        model = botocore.session.get_session().get_service_model("bedrock-runtime")
        _BOTO["stream"] = model.operation_model("ConverseStream").output_shape.members["stream"]
        _BOTO["converse"] = model.operation_model("Converse").output_shape
    return _BOTO["stream"], _BOTO["converse"]


class _RawStream:
    def __init__(self, data: bytes) -> None:
        self.data = data

    def stream(self) -> Iterator[bytes]:
        return (self.data[i:i + 61] for i in range(0, len(self.data), 61))

    def close(self) -> None:
        pass


def _bedrock_frames(data: bytes) -> None:
    from botocore.eventstream import EventStream
    from botocore.parsers import EventStreamJSONParser

    from hermes.transport import aws as transport_aws

    resolved = _route("bedrock")
    shape, _ = _botocore()
    events = EventStream(_RawStream(data), shape, EventStreamJSONParser(), "ConverseStream")
    _finish(resolved, lambda feed: transport_aws.stream_deltas(events, resolved.route.key, feed))


def _bedrock_json(data: bytes) -> None:
    from hermes.transport import aws as transport_aws

    resolved = _route("bedrock")
    _, shape = _botocore()
    _finish(resolved, lambda feed: feed(transport_aws.parse_converse(data, shape, resolved.route.key)))


def _history(data: bytes) -> None:
    from hermes.core.messages import dumps, load_jsonl, loads

    for m in load_jsonl(data.split(b"\n"), source="fuzz.jsonl"):
        if loads(dumps(m)) != m:
            raise AssertionError("history record does not round-trip")


def _in_file(name: str, data: bytes, fn: Callable[[Path], Any]) -> None:
    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / name
        p.write_bytes(data)
        fn(p)


def _routes_toml(data: bytes) -> None:
    from hermes.routing.resolve import load_table, resolve

    def go(p: Path) -> None:
        table = load_table(p)
        for row in table[:3]:  # a loaded row must be usable, not just constructed
            resolve(row.key, "http://127.0.0.1:9/v1", "some-model", table=table)

    _in_file("routes.toml", data, go)


def _config_toml(data: bytes) -> None:
    from hermes.config.settings import load_config

    _in_file("config.toml", data, load_config)


def _one_line(seed: bytes, rnd: random.Random) -> bytes:
    """A JSONL history with one record mutated (and now and then a blank or duplicated line)."""
    lines = seed.split(b"\n")
    i = rnd.randrange(len(lines))
    lines[i] = mutate_json(lines[i], rnd)
    if rnd.random() < 0.2:
        lines.insert(rnd.randrange(len(lines) + 1), rnd.choice([b"", b"  ", lines[i]]))
    return b"\n".join(lines)


def _recorder(whole: bool) -> Callable[[bytes], None]:
    """The proxy's side decoder: it must never raise, whatever the upstream sent (a refusal is
    ``message() is None``), and what it records must survive the history JSON form."""

    def run(data: bytes) -> None:
        from hermes.core import messages
        from hermes.proxy.recorder import Recorder

        rec = Recorder(_route("openai_chat"))
        if whole:
            rec.whole(data)
        else:
            for i in range(0, len(data), 97):
                rec.feed(data[i:i + 97])
        msg = rec.message()
        if msg is not None and messages.loads(messages.dumps(msg)) != msg:
            raise AssertionError("recorded turn does not survive dumps/loads")

    return run


def _mcp_result(data: bytes) -> None:
    """A ``tools/call`` result as the MCP client library validates it, then turned into the text
    the model sees, which must survive the stored form. What the library refuses reaches the
    model as a tool error (a refusal here)."""
    import pydantic
    from mcp.types import CallToolResult

    from hermes.tools.mcp import _result_text

    try:
        result = CallToolResult.model_validate_json(data)
    except pydantic.ValidationError as e:
        raise HermesError(f"MCP result refused by the client library: {e.error_count()} errors") from None
    from hermes.core import messages

    text = _result_text(result)
    if not isinstance(text, str):
        raise AssertionError("MCP result text is not text")
    msg = messages.Message("tool", (messages.ToolResult("c", text, "s__t"),))
    if messages.loads(messages.dumps(msg)) != msg:
        raise AssertionError("MCP result text does not survive the stored form")


_DOOR_SEALER_KEY = bytes(range(32))
"""A fixed key: the door seeds carry envelopes this sealer opens (the success path is fuzzed too)."""


def _door(kind: str) -> Callable[[bytes], None]:
    """A proxy front door reading a client's body as the proxy does: parsed, translated to the
    route's chat request (``messages``, ``responses``; ``chat`` is the chat door's body as it
    comes), its envelopes opened, then rewritten for the route (restore, pad, strip, switches).
    What the door refuses is a 400 for the client (``DoorError`` / ``ApiError``): a refusal."""

    def run(data: bytes) -> None:
        from hermes.proxy.anthropic_door import DoorError, to_chat
        from hermes.proxy.door import open_turns
        from hermes.proxy.responses_door import chat_request
        from hermes.proxy.rewrite import rewrite
        from hermes.proxy.seal import Sealer
        from hermes.routing.resolve import resolve
        from hermes.serving.http import ApiError

        target = resolve("deepseek", "http://127.0.0.1:9/v1", "deepseek-v4-pro")
        try:
            body = orjson.loads(data)
            if not isinstance(body, dict):
                raise HermesError("the request body must be a JSON object")
            envelopes: Mapping[int, Sequence[str]] = {}
            if kind == "messages":
                tr = to_chat(body, target)
                body, envelopes = tr.body, tr.envelopes
            elif kind == "responses":
                door = chat_request(body, target)
                body, envelopes = door.body, door.envelopes
            opened, _ = (open_turns(body["messages"], envelopes, Sealer([_DOOR_SEALER_KEY]), tenant="t",
                                    route=target.route.key) if envelopes else ({}, 0))
            rewrite(body, target, lambda keys: {}, opened=opened)
        except (DoorError, ApiError, orjson.JSONDecodeError) as e:
            raise HermesError(f"refused: {e}") from None

    return run


def _door_seeds() -> dict[str, list[bytes]]:
    """A tool loop in each door's own shape, reasoning carried in an envelope the fuzz sealer opens."""
    from hermes.core.messages import Reasoning
    from hermes.proxy.door import seal_turn
    from hermes.proxy.seal import Sealer
    from hermes.routing.resolve import resolve

    origin = resolve("deepseek", "http://127.0.0.1:9/v1", "deepseek-v4-pro").key
    env = seal_turn((Reasoning("I should list the files.", origin),),
                    Sealer([_DOOR_SEALER_KEY]), tenant="t", route="deepseek")
    tools = [{"name": "list_files", "description": "List", "input_schema": {
        "type": "object", "properties": {"path": {"type": "string"}}}}]
    messages = {"model": "deepseek-v4-pro", "max_tokens": 1024, "system": "be brief", "tools": tools,
                "thinking": {"type": "enabled", "budget_tokens": 2048}, "messages": [
                    {"role": "user", "content": "what is here?"},
                    {"role": "assistant", "content": [{"type": "thinking", "thinking": "I should list the files.",
                                                       "signature": env},
                                                      {"type": "tool_use", "id": "call_1", "name": "list_files",
                                                       "input": {"path": "."}}]},
                    {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "call_1",
                                                  "content": [{"type": "text", "text": "a b"}]},
                                                 {"type": "text", "text": "and now?"}]}]}
    responses = {"model": "deepseek-v4-pro", "instructions": "be brief", "store": False, "stream": True,
                 "include": ["reasoning.encrypted_content"], "reasoning": {"effort": "high"},
                 "tools": [{"type": "function", "name": "list_files", "parameters": tools[0]["input_schema"]}],
                 "input": [{"type": "message", "role": "user", "content": [{"type": "input_text",
                                                                            "text": "what is here?"}]},
                           {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": env},
                           {"type": "function_call", "call_id": "call_1", "name": "list_files",
                            "arguments": "{\"path\": \".\"}"},
                           {"type": "function_call_output", "call_id": "call_1", "output": "a b"}]}
    chat = {"model": "deepseek-v4-pro", "stream": True, "messages": [
        {"role": "system", "content": "be brief"}, {"role": "user", "content": "what is here?"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "list_files", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": "a b"}]}
    return {"door.messages": [orjson.dumps(messages)], "door.responses": [orjson.dumps(responses)],
            "door.chat": [orjson.dumps(chat)]}


WIRES = ("openai_chat", "anthropic", "gemini", "openai_responses")

# One line per decoder or parser. A new one (e.g. a proxy front door reading client bodies) is
# one more row: ``Target(name, corpus key, byte/structure mutator, run, shape mutator)`` with its
# seeds either captured in ``capture_corpus`` or listed in ``STATIC_SEEDS`` under the corpus key.
TARGETS: tuple[Target, ...] = (
    *(Target(f"{w}.sse", f"{w}.sse", mutate_sse, _sse_target(w), retype_sse) for w in WIRES),
    *(Target(f"{w}.json", f"{w}.json", mutate_json, _json_target(w), retype_json) for w in WIRES),
    Target("bedrock.frames", "bedrock.frames", mutate_frames, _bedrock_frames, retype_frames),
    Target("bedrock.json", "bedrock.json", mutate_json, _bedrock_json, retype_json),
    Target("history", "history", lambda s, r: _one_line(s, r), _history, retype_line),
    Target("routes.toml", "routes.toml", mutate_toml, _routes_toml),
    Target("config.toml", "config.toml", mutate_toml, _config_toml),
    Target("recorder.sse", "openai_chat.sse", mutate_sse, _recorder(whole=False), retype_sse),
    Target("recorder.json", "openai_chat.json", mutate_json, _recorder(whole=True), retype_json),
    Target("mcp.result", "mcp.result", mutate_json, _mcp_result, retype_json),
    *(Target(f"door.{k}", f"door.{k}", mutate_json, _door(k), retype_json) for k in ("messages", "responses", "chat")),
)


# ----------------------------------------------------------------------------- seed corpus

_CORPUS: dict[str, list[bytes]] = {}

_ROUTES_SEEDS = [
    b'[[route]]\nkey = "acme"\nwire = "openai_chat"\nhosts = ["acme.example"]\ncarriers = ["reasoning_content"]\n'
    b'must_echo = true\npolicy = "unsigned"\nbase_url = "https://acme.example/v1"\nkey_env = ["ACME_API_KEY"]\n'
    b'[route.switches]\nthinking = { type = "enabled" }\n',
    b'[[route]]\nkey = "deepseek"\nbase_url = "https://proxy.example/v1"\nthink_tags = false\n'
    b'[[route.model_rules]]\npattern = "deepseek-chat*"\npolicy = "strip"\nswitches = { a = 1 }\n',
    b'[[route]]\nkey = "generic"\nprior_turns = "loop"\n[[route]]\nkey = "x2"\nwire = "anthropic"\nauth = "x-api-key"\n',
]
_CONFIG_SEEDS = [
    b'provider = "deepseek"\nmodel = "deepseek-v4"\nbase_url = ""\nthinking = true\neffort = "high"\nstream = true\n'
    b'max_steps = 12\nallow_commands = false\ncontext_budget = 0\n\n[aliases]\n'
    b'fast = { provider = "groq", model = "openai/gpt-oss-20b" }\n\n[gateway]\ntoken = ""\n',
    b'model = "x"\n[aliases.slow]\nmodel = "m"\nbase_url = "http://127.0.0.1:1/v1"\n',
]

_MCP_SEEDS = [
    b'{"content":[{"type":"text","text":"a.txt\\nb.txt"}],"isError":false}',
    b'{"content":[{"type":"image","data":"aGVsbG8=","mimeType":"image/png"},'
    b'{"type":"resource","resource":{"uri":"file:///a","text":"hi"}},'
    b'{"type":"resource","resource":{"uri":"file:///b","blob":"aGk=","mimeType":"application/pdf"}},'
    b'{"type":"resource_link","uri":"file:///c","name":"c"},{"type":"audio","data":"AA==","mimeType":"audio/wav"}]}',
    b'{"content":[],"structuredContent":{"files":["a","b"],"n":2},"isError":true}',
]

STATIC_SEEDS: dict[str, list[bytes]] = {
    "routes.toml": _ROUTES_SEEDS,
    "config.toml": _CONFIG_SEEDS,
    "mcp.result": _MCP_SEEDS,
    **_door_seeds(),
}
"""Seeds written by hand (files a user writes, results of servers we have no emulator for)."""


def capture_corpus() -> dict[str, list[bytes]]:
    """Raw answers of every wire's emulator, captured once per process over loopback HTTP."""
    if _CORPUS:
        return _CORPUS
    import httpx

    from hermes.agent.provider import complete, get_wire
    from hermes.config.keys import auth_headers
    from hermes.core import messages
    from hermes.core.messages import Message, ToolResult
    from hermes.emulate import Emulator
    from hermes.emulate.bedrock import _frame, event_frames, response_payload
    from hermes.emulate.core import EmulatorState
    from hermes.replay import plan_replay
    from hermes.routing.resolve import resolve
    from hermes.wire import ToolSpec

    tools = [ToolSpec("list_files", "List files", {"type": "object", "properties": {"path": {"type": "string"}}})]
    corpus: dict[str, list[bytes]] = {k: [] for k in (*(f"{w}.{s}" for w in WIRES for s in ("sse", "json")),
                                                      "bedrock.frames", "bedrock.json", "history")}
    history_lines: list[bytes] = [messages.dumps(Message.user("list my files"))]
    plans = [("minimax", "MiniMax-M2"), ("openrouter", "deepseek/deepseek-r1"), ("copilot", "gemini-3-pro-preview"),
             ("deepseek", "deepseek-reasoner"), ("anthropic", "claude-opus-4-6"),
             ("gemini", "gemini-3-pro-preview"), ("openai-responses", "gpt-5")]
    with Emulator() as emu, httpx.Client(timeout=30) as http:
        for name, model in plans:
            resolved = resolve(name, emu.url(name), model)
            wire = get_wire(resolved.route.wire)
            history = [Message.user("list my files")]
            for _ in range(2):  # a tool call turn, then an answer after the tool result
                for stream in (False, True):
                    plan = plan_replay(history, resolved)
                    body = wire.to_wire(plan, tools=tools, stream=stream)
                    url, headers = wire.endpoint(resolved, stream=stream)
                    headers = {"content-type": "application/json", **headers,
                               **auth_headers(resolved.route, "sk-fuzz-0123456789abcdef")}
                    r = http.post(url, content=orjson.dumps(body), headers=headers)
                    if r.status_code == 200:
                        corpus[f"{resolved.route.wire}.{'sse' if stream else 'json'}"].append(r.content)
                turn = complete(resolved, history, tools=tools, api_key="sk-fuzz-0123456789abcdef").response.message
                history_lines.append(messages.dumps(turn))
                history.append(turn)
                calls = turn.tool_calls
                if not calls:
                    break
                result = Message("tool", tuple(ToolResult(c.id, "a.txt\nb.txt", c.name) for c in calls))
                history.append(result)
                history_lines.append(messages.dumps(result))
        state = EmulatorState()
        resolved = _route("bedrock")
        for model in ("us.anthropic.claude-sonnet-4-5-20250929-v1:0", "anthropic.claude-redact-sonnet-4-5-v1:0",
                      "openai.gpt-oss-120b-1:0"):
            body = get_wire("bedrock").to_wire(plan_replay([Message.user("list my files")], resolved), tools=tools)
            payload = response_payload(state, model, body)
            corpus["bedrock.json"].append(orjson.dumps(payload))
            corpus["bedrock.frames"].append(b"".join(_frame(k, m) for k, m in event_frames(payload)))
    corpus["history"] = [b"\n".join(history_lines)]
    corpus.update({k: list(v) for k, v in STATIC_SEEDS.items()})
    empty = [k for k, v in corpus.items() if not v]
    if empty:
        raise RuntimeError(f"no seeds captured for {empty}")
    _CORPUS.update(corpus)
    for target in TARGETS:  # a first run imports what the target needs (the mcp client's models
        with contextlib.suppress(Exception):  # take seconds to build), outside the per-case bound
            target.run(corpus[target.seeds][0])
    return _CORPUS
