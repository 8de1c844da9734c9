"""Tools: built-ins behave, plugins arrive through the `hermes.tools` entry-point group."""

from __future__ import annotations

import orjson
from _plugin import install_plugin

from hermes.messages import ToolCall
from hermes.tools import ToolContext, load_toolbox


def test_builtin_tools_work_in_the_working_directory(tmp_path):
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "app.py").write_text("def main():\n    return 42\n")
    box = load_toolbox(ToolContext(cwd=tmp_path), plugins=False)
    call = lambda name, **a: box.execute(ToolCall("c", name, orjson.dumps(a).decode()))
    assert call("list_dir", path=".").content == "src/"
    assert "return 42" in call("read_file", path="src/app.py").content
    assert call("search_files", pattern=r"def \w+", regex=True).content == "src/app.py:1: def main():"
    assert call("search_files", pattern="def main(").content == "src/app.py:1: def main():"  # literal by default
    denied = call("run_command", command="echo hi")
    assert denied.is_error and "permission" in denied.content
    allowed = load_toolbox(ToolContext(cwd=tmp_path, allow_commands=True), plugins=False)
    assert allowed.execute(ToolCall("c", "run_command", '{"command": "echo hi"}')).content == "exit code 0\nhi\n"
    asked: list[str] = []
    confirm = load_toolbox(ToolContext(cwd=tmp_path, confirm=lambda c: asked.append(c) or False), plugins=False)
    assert confirm.execute(ToolCall("c", "run_command", '{"command": "rm -rf /"}')).is_error
    assert asked == ["rm -rf /"]


def test_entry_point_tools_are_loaded(tmp_path, monkeypatch):
    install_plugin(tmp_path, monkeypatch, "hermes_echo_plugin", "echo",
                   "from hermes.tools import Tool\nfrom hermes.wire import ToolSpec\n"
                   "def tools():\n    return [Tool(ToolSpec('echo', 'Echo text.'), lambda args, ctx: args.get('text', ''))]\n")
    box = load_toolbox()
    assert "echo" in box.tools and [s.name for s in box.specs][:4] == ["list_dir", "read_file", "search_files",
                                                                        "run_command"]
    assert box.execute(ToolCall("c", "echo", '{"text": "hello"}')).content == "hello"
