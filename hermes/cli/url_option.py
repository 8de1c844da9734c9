"""Options that name a base URL (``--base-url``, ``--upstream``, ``--allow-base-url``), checked
where they enter: a bad URL is a usage error (exit 2) naming the option, before anything is
resolved, sent or stored. The rules are ``hermes.config.urlpolicy``'s."""

from __future__ import annotations

from typing import Any

import click

__all__ = ["BASE_URL", "url_problem"]


def url_problem(url: str) -> str | None:
    """Why ``url`` cannot be a base URL, or None; the text never repeats the URL, which may
    hold a password."""
    from ..config.urlpolicy import check_base_url
    from ..core.errors import RouteError

    try:
        check_base_url(url, "it")
    except RouteError as e:
        return f"{e}; {e.hint}"
    return None


class _BaseUrl(click.ParamType):
    name = "url"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> str:
        text = str(value)
        problem = url_problem(text) if text else None  # "" keeps the route's default
        if problem:
            self.fail(problem, param, ctx)
        return text


BASE_URL = _BaseUrl()
