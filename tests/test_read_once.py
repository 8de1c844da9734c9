"""config.toml and routes.toml are parsed once per process, and an edit is still seen at once.

``tomlfile.read_once`` keeps a parse while one ``stat`` says the file is unchanged; a file read
soon after it was written is confirmed by content (an edit within one timestamp tick keeps its
stamps). Real files, no clock or filesystem faked.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from hermes.config.settings import load_config
from hermes.core.errors import ConfigError
from hermes.routing.resolve import load_table


def test_config_is_parsed_once_while_the_file_is_unchanged(tmp_path: Path) -> None:
    f = tmp_path / "config.toml"
    f.write_text("context_budget = 40\n")
    first = load_config(f)
    assert load_config(f) is first  # kept, not parsed again (a fresh parse is a new object)
    old = f.stat().st_mtime_ns - 10**10
    os.utime(f, ns=(old, old))  # a settled file: the stamps alone decide from now on
    settled = load_config(f)
    assert settled.context_budget == 40 and load_config(f) is settled


def test_an_edit_is_seen_at_once_even_of_the_same_size(tmp_path: Path) -> None:
    f = tmp_path / "config.toml"
    for budget in (41, 42, 43):  # same size each time, written back to back
        f.write_text(f"context_budget = {budget}\n")
        assert load_config(f).context_budget == budget


def test_a_bad_file_is_refused_every_time_and_a_fix_is_seen(tmp_path: Path) -> None:
    f = tmp_path / "config.toml"
    f.write_text("max_steps = 0\n")
    for _ in range(2):
        with pytest.raises(ConfigError, match="max_steps"):
            load_config(f)
    f.write_text("max_steps = 3\n")
    assert load_config(f).max_steps == 3


def test_routes_toml_is_parsed_once_and_edits_are_seen(tmp_path: Path) -> None:
    f = tmp_path / "routes.toml"
    f.write_text('[[route]]\nkey = "one"\nwire = "openai_chat"\n')
    table = load_table(f)
    assert load_table(f) is table and table[0].key == "one"
    f.write_text('[[route]]\nkey = "two"\nwire = "openai_chat"\n')
    assert load_table(f)[0].key == "two"
    f.unlink()
    assert all(r.key != "two" for r in load_table(f))
