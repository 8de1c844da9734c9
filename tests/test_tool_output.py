"""Tools say what they did: a search names what it did not cover, and the terminal shows each
tool's result (a few lines, the rest counted) instead of a character count."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
from _cli import CANARY
from hypothesis import given, settings
from hypothesis import strategies as st

from hermes.cli.terminal import PREVIEW_LINES, preview, printable
from hermes.core.messages import ToolCall
from hermes.tools.builtins import ToolContext, load_toolbox


def _search(root: Path, **args: Any) -> str:
    box = load_toolbox(ToolContext(cwd=root), plugins=False)
    return box.execute(ToolCall("c", "search_files", orjson.dumps(args).decode())).content


def _tree(root: Path) -> None:
    (root / "src").mkdir()
    (root / "src" / "a.txt").write_text("a needle here\n")
    (root / "latin1.txt").write_bytes("caf\xe9 with a needle\n".encode("latin-1"))
    (root / "image.bin").write_bytes(b"\x89PNG\0\0needle")
    (root / ".git").mkdir()
    (root / ".git" / "config").write_text("needle\n")
    (root / "node_modules").mkdir()
    with (root / "big.log").open("w") as f:  # the needle past the first 2 MiB
        for i in range((3 << 20) // 32):
            f.write(f"{i:07d} nothing to see, move on\n")  # 32 bytes
        f.write("the needle at the end\n")
    os.symlink("/etc/hostname", root / "outside")


def test_a_search_names_what_it_did_not_cover(tmp_path: Path) -> None:
    _tree(tmp_path)
    out = _search(tmp_path, pattern="needle")
    lines = out.splitlines()
    # a file in another encoding is searched, not skipped as if it had no match
    assert "src/a.txt:1: a needle here" in lines and any(x.startswith("latin1.txt:1: caf") for x in lines)
    assert "[searched with undecodable bytes replaced: 1 file: latin1.txt (not UTF-8)]" in lines
    assert "[not searched: 1 file: image.bin (binary)]" in lines
    assert "[only the first 2.0 MiB searched of 1 file: big.log (3.0 MiB)]" in lines
    assert ("[not searched: 2 directories: .git/, node_modules/ (hidden or dependencies; pass one as 'path' "
            "to search it)]") in lines
    assert "[not followed: 1 link or special file: outside]" in lines
    # what a "no match" covered is said too
    assert _search(tmp_path / "src", pattern="absent") == "no matches in 1 file (14 B)"
    assert _search(tmp_path, pattern="needle", path=".git") == "config:1: needle"
    # many gaps of a kind: a few names and a count
    for i in range(5):
        (tmp_path / "src" / f"b{i}.bin").write_bytes(b"\0")
    assert "[not searched: 5 files: b0.bin, b1.bin, b2.bin and 2 more (binary)]" in _search(
        tmp_path / "src", pattern="needle").splitlines()


@settings(max_examples=200, deadline=None)
@given(st.lists(st.text(max_size=300), max_size=40), st.integers(20, 200))
def test_a_preview_is_bounded_printable_and_counts_the_rest(lines: list[str], width: int) -> None:
    text = "\n".join(lines)
    shown = preview(text, width=width)
    total = len(text.splitlines())
    assert len(shown) <= PREVIEW_LINES + 1
    assert all(len(line) <= width and line == printable(line) for line in shown[:PREVIEW_LINES])
    if total > PREVIEW_LINES:
        rest = total - PREVIEW_LINES
        assert shown[-1] == f"… {rest:,} more line{'s' if rest > 1 else ''}"
    else:
        assert len(shown) == total


def test_the_terminal_shows_each_tools_result(emulator: Any, hermes_home: Path, tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    for i in range(20):
        (work / f"notes{i:02d}.txt").write_text(f"line with a needle {i}\n")
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env.update(HERMES_HOME=str(hermes_home), HERMES_API_KEY=CANARY)
    r = subprocess.run([sys.executable, "-m", "hermes", "chat", "-q", '#call=search_files{"pattern": "needle"}',
                        "-p", "deepseek", "-m", "deepseek-v4", "-u", emulator.url("deepseek")],
                       capture_output=True, text=True, env=env, cwd=work, timeout=120)
    assert r.returncode == 0, r.stderr
    err = r.stderr.splitlines()
    at = err.index(next(x for x in err if x.startswith("  ← search_files: ")))
    assert err[at + 1:at + 1 + PREVIEW_LINES] == [f"    notes{i:02d}.txt:1: line with a needle {i}" for i in range(8)]
    assert err[at + 1 + PREVIEW_LINES] == "    … 12 more lines"
