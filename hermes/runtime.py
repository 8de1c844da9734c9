"""Opening a session and choosing its route: shared by ``hermes chat`` and ``hermes gateway``.

Precedence for provider / model / base URL: explicit arguments, then a config alias named by
the model, then what the resumed session last used, then config.toml defaults. A session
remembers the route it last talked to, so ``--resume`` needs no flags; giving new ones
switches the session's provider (its stored reasoning keeps its origin, so nothing foreign is
replayed to the new route).
"""

from __future__ import annotations

from .config import Config
from .errors import RouteError
from .paths import routes_path
from .resolve import Resolved, load_table, resolve

__all__ = ["choose_route", "open_session"]


def choose_route(config: Config, *, provider: str | None, model: str | None, base_url: str | None,
                 session: object | None = None) -> Resolved:
    """Resolve the route for a request from flags, aliases, the session and config."""
    if model and model in config.aliases:
        alias = config.aliases[model]
        provider, model, base_url = provider or alias.provider, alias.model, base_url or alias.base_url
    if session is not None:
        same_provider = provider is None or provider == getattr(session, "provider", None)
        provider = provider or getattr(session, "provider", None) or None
        model = model or getattr(session, "model", None) or None
        if same_provider:
            base_url = base_url or getattr(session, "base_url", None) or None
    provider = provider or (None if base_url else config.provider)
    model = model or config.model
    base_url = base_url or (config.base_url if provider in (None, config.provider) else None)
    if not model:
        raise RouteError("no model given", hint="pass --model, or set model = \"...\" in config.toml")
    return resolve(provider, base_url, model, table=load_table(routes_path()))


def open_session(store: object, config: Config, *, resume: str | None, cont: bool, provider: str | None,
                 model: str | None, base_url: str | None, title: str = "") -> tuple[str, Resolved]:
    """(session id, route) for a chat: resumed, the latest, or a new session."""
    from .errors import StoreError

    info = None
    if resume:
        info = store.get_session(resume)  # type: ignore[attr-defined]
    elif cont:
        info = store.latest_session()  # type: ignore[attr-defined]
        if info is None:
            raise StoreError("no session to continue", hint="start one with `hermes chat`")
    resolved = choose_route(config, provider=provider, model=model, base_url=base_url, session=info)
    explicit_url = base_url or (resolved.base_url if resolved.base_url != resolved.route.base_url else "")
    if info is None:
        sid = store.create_session(provider=resolved.route.key, model=resolved.model,  # type: ignore[attr-defined]
                                   base_url=explicit_url, title=title)
        return sid, resolved
    if (info.provider, info.model, info.base_url) != (resolved.route.key, resolved.model, explicit_url):
        store.update_session(info.id, provider=resolved.route.key, model=resolved.model,  # type: ignore[attr-defined]
                             base_url=explicit_url)
    return info.id, resolved
