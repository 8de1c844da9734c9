"""Every route pointed at a running ``hermes emulate``: ``hermes chat --emulate`` or
``HERMES_EMULATE=URL`` for the commands that load a runtime (chat, its REPL, ``sessions compress``).

The switch applies to each route as it is chosen — flags, the session's route, a REPL
``/model`` — so nothing reaches a real host, whatever the session stored. Sessions keep the
route they would use without it (a stored base URL is never the emulator's). The key sent is
``--api-key`` or :data:`EMULATOR_KEY`, never one looked up in the environment: a real key
stays out of an emulated conversation.
"""

from __future__ import annotations

import os
import socket
from dataclasses import replace
from urllib.parse import urlsplit

from ..core.errors import ConfigError
from .resolve import Resolved, parse_base_url
from .routes import Route

__all__ = ["DEFAULT_ROOT", "EMULATOR_KEY", "STARTING_S", "check_running", "emulated", "emulated_url", "emulator_root"]

DEFAULT_ROOT = "http://127.0.0.1:8765"
"""Where ``hermes emulate`` listens by default."""
EMULATOR_KEY = "sk-emulator"
"""The key an emulated request carries unless ``--api-key`` gives another."""

def _base_paths() -> dict[str, str]:
    """Each personality ``hermes emulate`` serves, with its path under ``/NAME`` (its registry:
    imported only when emulating)."""
    from ..emulate import PERSONALITIES, load_all

    load_all()
    return {name: p.base_path for name, p in PERSONALITIES.items()}


def emulator_root(value: str | None = None) -> str | None:
    """The emulator's root URL from ``value`` (``--emulate``) or ``HERMES_EMULATE``; None when off.
    ``1``/``true``/``yes``/``on`` mean :data:`DEFAULT_ROOT`."""
    raw = (value if value is not None else os.environ.get("HERMES_EMULATE", "")).strip()
    if not raw or raw.lower() in ("0", "false", "no", "off"):
        return None
    if raw.lower() in ("1", "true", "yes", "on"):
        return DEFAULT_ROOT
    parts = urlsplit(raw)
    if parts.scheme != "http" or not parts.hostname:
        raise ConfigError(f"HERMES_EMULATE must be the emulator's http:// root URL, not {raw!r}",
                          hint=f"e.g. HERMES_EMULATE={DEFAULT_ROOT} (what `hermes emulate` prints)")
    return raw.rstrip("/")


def personality(route: Route) -> str:
    """The emulator personality that plays ``route``: its own, else (a routes.toml row) the last
    built-in row's of its wire — for chat completions the lenient ``generic`` one."""
    from .routes import ROUTES

    names = _base_paths()
    if route.key in names:
        return route.key
    return next((r.key for r in reversed(ROUTES) if r.wire == route.wire and r.key in names), route.key)


def emulated_url(root: str, route: Route) -> str:
    name = personality(route)
    return f"{root}/{name}{_base_paths().get(name, '/v1')}"


def emulated(resolved: Resolved, root: str) -> Resolved:
    """``resolved`` served by the emulator at ``root`` instead of its host."""
    url = emulated_url(root, resolved.route)
    return replace(resolved, base_url=url, host=parse_base_url(url)[0],
                   why=(*resolved.why, f"HERMES_EMULATE: served by the emulator at {url}"))


STARTING_S = 5.0
"""How long ``check_running`` waits for an emulator to start listening: the README's first line
is ``hermes emulate & hermes chat --emulate …``, and the chat is ready before the emulator."""


def check_running(root: str, *, wait_s: float = STARTING_S) -> None:
    """A clear error, before anything is sent or stored, when nothing listens at ``root`` within
    ``wait_s`` (an emulator started in the same command line is still importing)."""
    import time

    parts = urlsplit(root)
    deadline = time.monotonic() + wait_s
    while True:
        try:
            socket.create_connection((parts.hostname or "127.0.0.1", parts.port or 80), timeout=1.0).close()
            return
        except OSError:
            if time.monotonic() >= deadline:
                break
            time.sleep(0.1)
    raise ConfigError(f"no emulator answers at {root} (waited {wait_s:g} s)",
                      hint="start one first: `hermes emulate &` (or point HERMES_EMULATE at where it "
                           "listens)") from None
