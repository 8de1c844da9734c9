"""A real installed-looking plugin for tests: a dist-info with an entry point, on sys.path."""

from __future__ import annotations

from pathlib import Path

import pytest


def install_plugin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, module: str, entry: str, source: str) -> None:
    """Make ``module`` (``source``) importable and register ``entry = module:tools`` in the
    ``hermes.tools`` entry-point group, the way ``pip install`` of a plugin would."""
    site = tmp_path / "site"
    dist = site / f"{module}-0.1.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {module.replace('_', '-')}\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text(f"[hermes.tools]\n{entry} = {module}:tools\n")
    (site / f"{module}.py").write_text(source)
    monkeypatch.syspath_prepend(str(site))
