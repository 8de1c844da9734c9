"""Every class in the product code has a name of its own (issue 33): a reader who meets
``Learned`` or ``Exchange`` in a traceback or a type annotation knows which one it is."""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent / "hermes"


def test_no_two_classes_in_hermes_share_a_name() -> None:
    where: defaultdict[str, list[str]] = defaultdict(list)
    for path in sorted(ROOT.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if isinstance(node, ast.ClassDef):
                where[node.name].append(f"{path.relative_to(ROOT)}:{node.lineno}")
    shared = {name: places for name, places in where.items() if len(places) > 1}
    assert not shared, f"class names defined more than once: {shared}"
