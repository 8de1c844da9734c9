"""Entry points of one group, without scanning every installed package when none declares it.

``importlib.metadata.entry_points(group=...)`` parses the ``entry_points.txt`` of every
distribution on ``sys.path`` (and imports ``email``, ``csv`` and ``zipfile`` to do it), paid
by every ``hermes chat -q`` for a group
(``hermes.tools``) that most machines never declare. A distribution can only declare a group
in a ``[group]`` section of its ``entry_points.txt``, so a file that does not contain the
group's name declares nothing in it. ``may_declare`` reads those files as bytes (a directory
listing per ``sys.path`` entry, one read per distribution, no parsing) and only when one of
them names the group does ``entry_points`` ask ``importlib.metadata`` — which then does
exactly what it always did. Where this module cannot see what ``importlib.metadata`` would
see (a zip or egg file on ``sys.path``, a ``sys.path`` entry that is not a string, a meta path
finder of its own that lists distributions), it answers "maybe" and the full scan runs.
"""

from __future__ import annotations

import os
import sys
from importlib.machinery import PathFinder
from typing import Any

__all__ = ["entry_points", "may_declare"]

_INFO = (".dist-info", ".egg-info")


def entry_points(group: str) -> list[Any]:
    """``importlib.metadata.entry_points(group=group)`` as a list; no scan when no installed
    distribution can declare ``group``."""
    if not may_declare(group):
        return []
    from importlib.metadata import entry_points as scan

    return list(scan(group=group))


def may_declare(group: str) -> bool:
    """False only when no distribution ``importlib.metadata`` would find has an
    ``entry_points.txt`` naming ``group``."""
    if any(hasattr(f, "find_distributions") and f is not PathFinder for f in sys.meta_path):
        return True
    needle = group.encode()
    for entry in sys.path:
        if not isinstance(entry, str):
            return True
        root = entry or "."
        try:
            children = os.listdir(root)
        except OSError:
            if os.path.exists(root):  # a zip (or something else importlib.metadata may read)
                return True
            continue
        egg = os.path.basename(root).lower().endswith(".egg")
        for child in children:
            low = child.lower()
            info = low.endswith(_INFO) or (egg and low == "egg-info")
            if info and _names(os.path.join(root, child, "entry_points.txt"), needle):
                return True
    return False


def _names(path: str, needle: bytes) -> bool:
    try:
        with open(path, "rb") as f:
            return needle in f.read()
    except (FileNotFoundError, NotADirectoryError):
        return False
    except OSError:  # unreadable here; let importlib.metadata decide
        return True
