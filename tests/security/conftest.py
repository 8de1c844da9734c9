"""Security tests import the shared harness (``_harness``) and the CLI runner (``_cli``)."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
