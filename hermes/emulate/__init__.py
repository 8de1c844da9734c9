"""Loopback emulators of every provider route (see ``core`` for the harness).

Personality modules in this package register themselves on import; ``load_all`` imports
every module here, so adding a personality is adding a module.
"""

from __future__ import annotations

import importlib
import pkgutil

from .core import PERSONALITIES, Emulator, EmulatorState, Personality, register

__all__ = ["PERSONALITIES", "Emulator", "EmulatorState", "Personality", "load_all", "register"]

_HARNESS = {"core", "script"}


def load_all() -> None:
    for info in pkgutil.iter_modules(__path__):
        if info.name not in _HARNESS and not info.name.startswith("_"):
            importlib.import_module(f"{__name__}.{info.name}")
