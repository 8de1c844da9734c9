"""The agent can change files: write_file and edit_file inside the workspace, refused without the
user's leave or when the old text is not there exactly once, written atomically, undone by
``/undo``; in the REPL the user sees the diff and says yes or no."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest
from _cli import CANARY
from _pty import PROMPT, plain, repl
from hypothesis import given, settings
from hypothesis import strategies as st

from hermes.core.messages import ToolCall
from hermes.tools.builtins import ToolContext, load_toolbox
from hermes.tools.edits import apply_edit, undo


def _box(root: Path, **ctx: Any) -> Any:
    return load_toolbox(ToolContext(cwd=root, **ctx), plugins=False)


def _call(box: Any, name: str, **args: Any) -> Any:
    return box.execute(ToolCall("c", name, orjson.dumps(args).decode()))


def test_write_and_edit_change_files_only_as_asked(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    app = work / "app.py"
    app.write_text("def main():\n    return 41\n")
    app.chmod(0o640)
    box = _box(work, allow_writes=True)
    r = _call(box, "edit_file", path="app.py", old="return 41", new="return 42")
    assert not r.is_error and r.content.startswith("changed app.py (")
    assert "-    return 41\n+    return 42" in r.content
    assert app.read_text() == "def main():\n    return 42\n" and (app.stat().st_mode & 0o777) == 0o640
    r = _call(box, "write_file", path="pkg/new.txt", content="hello\n")
    assert not r.is_error and (work / "pkg" / "new.txt").read_text() == "hello\n"
    assert [p.name for p in work.iterdir() if p.name.endswith(".hermes-tmp")] == []

    # refused: text not there, there twice, an empty old, a file that does not exist
    app.write_text("x = 1\nx = 1\n")
    for args, why in (({"old": "y = 2", "new": "z"}, "was not found in app.py"),
                      ({"old": "x = 1", "new": "z"}, "occurs 2 times in app.py"),
                      ({"old": "", "new": "z"}, "must be the exact text")):
        r = _call(box, "edit_file", path="app.py", **args)
        assert r.is_error and why in r.content
    assert app.read_text() == "x = 1\nx = 1\n"
    assert "does not exist" in _call(box, "edit_file", path="nope.py", old="a", new="b").content

    # /undo: the edit and the new file go back, last first
    assert undo(box.ctx.changes) == ["removed new.txt (it was new)", "restored app.py"]
    assert app.read_text() == "def main():\n    return 41\n" and not (work / "pkg" / "new.txt").exists()


def test_writes_need_leave_and_stay_inside_the_workspace(tmp_path: Path) -> None:
    work, notes, outside = tmp_path / "work", tmp_path / "notes", tmp_path / "outside.txt"
    work.mkdir()
    notes.mkdir()
    outside.write_text("keep\n")
    (notes / "n.txt").write_text("keep\n")
    (work / "link.txt").symlink_to(outside)
    (work / "a.txt").write_text("a\n")
    asked: list[tuple[str, str]] = []
    no = _box(work, confirm_write=lambda name, diff: asked.append((name, diff)) or False)
    r = _call(no, "write_file", path="a.txt", content="b\n")
    assert r.is_error and "permission" in r.content and (work / "a.txt").read_text() == "a\n"
    assert asked == [("a.txt", "--- a/a.txt\n+++ b/a.txt\n@@ -1 +1 @@\n-a\n+b\n")]
    assert _call(_box(work), "write_file", path="new.txt", content="x").is_error and not (work / "new.txt").exists()
    yes = _box(work, allow_writes=True, read_roots=(notes,))
    for path in ("../outside.txt", str(outside), "link.txt", str(notes / "n.txt")):
        r = _call(yes, "write_file", path=path, content="owned\n")
        assert r.is_error and "outside the workspace" in r.content, path
    assert outside.read_text() == "keep\n" and (notes / "n.txt").read_text() == "keep\n"
    os.mkfifo(work / "pipe")
    assert _call(yes, "write_file", path="pipe", content="x").is_error


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet="ab\n", max_size=30), st.text(alphabet="ab\n", max_size=4), st.text(max_size=5))
def test_an_edit_replaces_exactly_the_one_occurrence(text: str, old: str, new: str) -> None:
    if old and text.count(old) == 1:
        at = text.index(old)
        assert apply_edit(text, old, new, name="f") == text[:at] + new + text[at + len(old):]
    else:
        with pytest.raises(ValueError):
            apply_edit(text, old, new, name="f")


def test_chat_edits_a_file_with_allow_writes_and_not_without(emulator: Any, hermes_home: Path,
                                                              tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    (work / "app.py").write_text("print('hi')\n")
    query = '#call=edit_file{"path": "app.py", "old": "hi", "new": "hello"}'
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env.update(HERMES_HOME=str(hermes_home), HERMES_API_KEY=CANARY)

    def chat(*extra: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "hermes", "chat", "-q", query, "-p", "deepseek", "-m",
                               "deepseek-v4", "-u", emulator.url("deepseek"), *extra], capture_output=True,
                              text=True, env=env, cwd=work, timeout=120, stdin=subprocess.DEVNULL)

    r = chat()
    assert r.returncode == 0 and "← edit_file: error" in r.stderr and "permission" in r.stderr
    assert (work / "app.py").read_text() == "print('hi')\n"
    r = chat("--allow-writes")
    assert r.returncode == 0 and "← edit_file: " in r.stderr and "+print('hello')" in r.stderr
    assert (work / "app.py").read_text() == "print('hello')\n"


def test_the_repl_shows_the_diff_asks_and_undoes(emulator: Any, hermes_home: Path, tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    (work / "app.py").write_text("print('hi')\n")
    child = repl(hermes_home, work, "-p", "deepseek", "-m", "deepseek-v4", "-u", emulator.url("deepseek"))
    child.timeout = 90  # a loaded machine: every wait below is for output that does come
    try:
        child.sendline('#call=edit_file{"path": "app.py", "old": "hi", "new": "no"}')
        child.expect(r"Apply this change to app\.py\?", timeout=90)
        child.sendline("n")
        child.expect(r"Done \(deepseek-v4\)", timeout=90)
        child.expect(PROMPT)
        assert (work / "app.py").read_text() == "print('hi')\n"
        child.sendline('#call=edit_file{"path": "app.py", "old": "hi", "new": "yes"}')
        child.expect(r"Apply this change to app\.py\?", timeout=90)
        child.sendline("y")
        child.expect(r"Done \(deepseek-v4\)", timeout=90)
        child.expect(PROMPT)
        assert (work / "app.py").read_text() == "print('yes')\n"
        shown = plain(child)
        assert "-print('hi')" in shown and "+print('yes')" in shown
        child.sendline("/undo")
        child.expect("restored app.py")
        child.expect(PROMPT)
        assert (work / "app.py").read_text() == "print('hi')\n"
        child.sendline("/quit")
        child.expect(pexpect_eof())
    except Exception as e:  # the transcript says where it stopped
        raise AssertionError(f"{type(e).__name__}; the terminal showed:\n{plain(child)[-3000:]}") from None
    finally:
        child.close(force=True)


def pexpect_eof() -> Any:
    import pexpect

    return pexpect.EOF
