"""Tools: built-ins behave, plugins arrive through the `hermes.tools` entry-point group."""

from __future__ import annotations

import orjson
from _plugin import install_plugin
from hypothesis import given, settings
from hypothesis import strategies as st

from hermes.core.messages import ToolCall
from hermes.tools.builtins import ToolContext, load_toolbox


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
                   "from hermes.tools.builtins import Tool\nfrom hermes.wire import ToolSpec\n"
                   "def tools():\n    return [Tool(ToolSpec('echo', 'Echo text.'), lambda args, ctx: args.get('text', ''))]\n")
    box = load_toolbox()
    assert "echo" in box.tools and [s.name for s in box.specs][:4] == ["list_dir", "read_file", "search_files",
                                                                        "run_command"]
    assert box.execute(ToolCall("c", "echo", '{"text": "hello"}')).content == "hello"


# ----------------------------------------------------------------------------- plugin discovery

PROBE = ("import sys\nfrom hermes.tools.builtins import load_toolbox\n"
         "print(' '.join(sorted(load_toolbox().tools)), 'importlib.metadata' in sys.modules)\n")


def test_a_plugin_loads_in_a_fresh_process_and_none_costs_no_metadata_scan(tmp_path):
    """A real process per layout: with a plugin installed its tool is there; with only other
    packages' entry points (console scripts) nothing parses every package's metadata."""
    import os
    import subprocess
    import sys

    plugin, other = tmp_path / "plugin", tmp_path / "other"
    (plugin / "hermes_echo_plugin-0.1.dist-info").mkdir(parents=True)
    (plugin / "hermes_echo_plugin-0.1.dist-info" / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: hermes-echo-plugin\nVersion: 0.1\n")
    (plugin / "hermes_echo_plugin-0.1.dist-info" / "entry_points.txt").write_text(
        "[console_scripts]\necho-it = hermes_echo_plugin:main\n\n[hermes.tools]\necho = hermes_echo_plugin:tools\n")
    (plugin / "hermes_echo_plugin.py").write_text(
        "from hermes.tools.builtins import Tool\nfrom hermes.wire import ToolSpec\n"
        "def tools():\n    return [Tool(ToolSpec('echo', 'Echo text.'), lambda args, ctx: args.get('text', ''))]\n")
    (other / "tool_less-1.0.dist-info").mkdir(parents=True)
    (other / "tool_less-1.0.dist-info" / "entry_points.txt").write_text("[console_scripts]\nx = tool_less:main\n")

    def tools_and_scan(site):
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")])}
        out = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, env=env,
                             check=True, timeout=120).stdout.split()
        return out[:-1], out[-1]

    names, scanned = tools_and_scan(plugin)
    assert "echo" in names and "read_file" in names and scanned == "True"
    names, scanned = tools_and_scan(other)
    assert "echo" not in names and "read_file" in names and scanned == "False"


_SECTIONS = ["[hermes.tools]\n{n} = {n}_mod:tools\n", "[console_scripts]\n{n} = {n}_mod:main\n",
             "[hermes.toolsx]\n{n} = {n}_mod:tools\n", "[ hermes.tools.builtins ]\n{n} = {n}_mod:tools\n",
             "# hermes.tools.builtins in a comment\n", "[hermes.tools]\n"]


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.sampled_from([".dist-info", ".egg-info", ".DIST-INFO", ".txt"]),
                          st.lists(st.sampled_from(_SECTIONS), max_size=3)), max_size=4))
def test_entry_points_are_what_importlib_metadata_finds(dists):
    """Any layout of installed packages: ``plugins.entry_points`` gives what a full
    ``importlib.metadata`` scan gives, and says "none" without the scan only when that is right."""
    import importlib.metadata
    import sys
    import tempfile
    from pathlib import Path

    from hermes.tools import plugins

    with tempfile.TemporaryDirectory() as d:
        for i, (suffix, sections) in enumerate(dists):
            info = Path(d) / f"pkg{i}-1.0{suffix}"
            info.mkdir()
            (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: pkg{i}\nVersion: 1.0\n")
            (info / "entry_points.txt").write_text("\n".join(s.format(n=f"p{i}") for s in sections))
        saved = sys.path[:]
        sys.path[:] = [d]
        try:
            full = [(e.name, e.value) for e in importlib.metadata.entry_points(group="hermes.tools")]
            ours = [(e.name, e.value) for e in plugins.entry_points("hermes.tools")]
            maybe = plugins.may_declare("hermes.tools")
        finally:
            sys.path[:] = saved
    assert ours == full
    assert maybe or not full


def test_where_the_quick_look_cannot_see_it_leaves_it_to_the_full_scan(tmp_path, monkeypatch):
    import sys
    import zipfile

    from hermes.tools import plugins

    egg = tmp_path / "thing-1.0.egg"
    (egg / "EGG-INFO").mkdir(parents=True)
    (egg / "EGG-INFO" / "entry_points.txt").write_text("[hermes.tools]\nt = thing:tools\n")
    monkeypatch.setattr(sys, "path", [str(tmp_path / "missing"), str(egg)])
    assert plugins.may_declare("hermes.tools")  # an egg directory's EGG-INFO
    monkeypatch.setattr(sys, "path", [str(tmp_path / "missing")])
    assert not plugins.may_declare("hermes.tools")
    with zipfile.ZipFile(tmp_path / "lib.zip", "w") as z:
        z.writestr("x.py", "")
    monkeypatch.setattr(sys, "path", [str(tmp_path / "lib.zip")])
    assert plugins.may_declare("hermes.tools")  # a zip: importlib.metadata reads inside it
    monkeypatch.setattr(sys, "path", [tmp_path])  # not a str
    assert plugins.may_declare("hermes.tools")

    class Lister:
        def find_distributions(self, context=None):
            return iter(())

    monkeypatch.setattr(sys, "path", [])
    monkeypatch.setattr(sys, "meta_path", [*sys.meta_path, Lister()])
    assert plugins.may_declare("hermes.tools")
