"""Resume cost: load a 10,000-message session (reasoning text + 4 KB blobs) with Store.load,
against a raw SQLite SELECT of the same rows plus a JSON decode of each, in the same run.

    python bench/resume.py            # prints `resume ratio X.XX` (target ≤ 2×)
    python bench/resume.py --instructions   # also `resume instr_ratio X.XX` (callgrind: not moved by load)
"""

from __future__ import annotations

import base64
import os
import sqlite3
import sys
import tempfile
from pathlib import Path

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parent))
import _instr
from _timing import best_of, report

from hermes.core.messages import Message, Reasoning, RouteKey, Text, ToolCall, ToolResult
from hermes.store import Store


def build(store: Store, n_messages: int) -> str:
    sid = store.create_session(provider="anthropic", model="claude-opus-5")
    origin = RouteKey("anthropic", "api.anthropic.com", "claude-opus-5", "anthropic")
    turn: list[Message] = []
    for i in range(n_messages // 4):
        blob = base64.b64encode(os.urandom(3000)).decode()  # 4 KB signature-like blob
        turn = [Message.user(f"question {i}"),
                Message("assistant", (Reasoning("thinking " * 220, origin, blob, "anthropic.signature"),
                                      ToolCall(f"c{i}", "read_file", '{"path": "a.py"}'))),
                Message("tool", (ToolResult(f"c{i}", "file contents " * 20),)),
                Message("assistant", (Reasoning("done " * 100, origin, blob[:2000] + "x", "anthropic.signature"),
                                      Text("answer " * 30)))]
        store.append_turn(sid, turn)
    return sid


def raw(db: Path) -> int:
    c = sqlite3.connect(db)
    rows = c.execute("SELECT p.kind, p.text, p.data, b.data FROM parts p LEFT JOIN blobs b ON b.hash = p.blob_hash "
                     "WHERE p.session_id = (SELECT id FROM sessions LIMIT 1) ORDER BY p.seq, p.position").fetchall()
    out = [(kind, text, orjson.loads(data) if data else None, blob) for kind, text, data, blob in rows]
    c.close()
    return len(out)


def count_worker(what: str, db: str, sid: str) -> None:
    """Under callgrind (``_instr.count_region``): one ``Store.load`` or one raw read, each
    with its connection, as ``main`` times them."""
    if what == "ours":
        _instr.region(lambda: Store(Path(db)).load(sid))
    else:
        _instr.region(lambda: raw(Path(db)))


def main() -> None:
    if sys.argv[1:2] == ["--count"]:
        count_worker(*sys.argv[2:5])
        return
    with tempfile.TemporaryDirectory() as d:
        db = Path(d) / "state.db"
        store = Store(db)
        sid = build(store, 10_000)
        store.close()
        assert len(Store(db).load(sid)) == 10_000

        def ours() -> None:
            s = Store(db)
            s.load(sid)
            s.close()

        report("resume", best_of(ours), best_of(lambda: raw(db)), target=2)
        if "--instructions" in sys.argv and _instr.available():
            counts = [_instr.count_region([_instr.python(), __file__, "--count", w, str(db), sid])
                      for w in ("ours", "raw")]
            if counts[0] and counts[1]:
                print(f"  instructions: Store.load {counts[0] / 1e6:.0f} M, raw read {counts[1] / 1e6:.0f} M")
                print(f"resume instr_ratio {counts[0] / counts[1]:.2f}")


if __name__ == "__main__":
    main()
