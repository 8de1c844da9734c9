"""``POST /<route>/v1/responses`` on a Responses route (OpenAI's, xAI's): the upstream's own API, relayed.

Nothing is translated: a Responses client talking to a Responses API already carries its
reasoning the way the API wants it — reasoning items with the ``encrypted_content`` the API
minted, which a ``store: false`` client (Codex) sends back itself. Those items pass through
untouched, and so does the answer, byte for byte as a stream. What the proxy adds is the
route's rules, as for every other door:

* a ``store: false`` request gets ``reasoning.encrypted_content`` in ``include`` (without it
  the API returns reasoning items with no content, and the next stateless request cannot carry
  them back — OpenAI's reasoning guide, "encrypted reasoning items");
* the route's keep-thinking switches (``reasoning.context: all_turns`` where the model reads
  earlier turns only when asked), merged under what the client set itself;
* learned value lessons (``reasoning.summary`` refused for an unverified organisation,
  an effort the model does not take) applied, and a new refusal learned and retried once;
* a top-level parameter the API answered ``unknown_parameter`` for (Codex's own
  ``client_metadata``, which OpenAI's API refuses: SEMOSS/Semoss PR 2532) learned per model in
  the capability ledger and left out from then on, the request retried once without it.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import orjson
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse

from ..core.attempt import build
from ..core.errors import ProviderHTTPError
from ..rejections import RetryState, ValueRule, apply_values, recover
from ..routing.resolve import Resolved
from ..routing.routes import Route as Row
from ..routing.routes import deep_merge
from ..store.requestlog import log_event
from . import app
from .responses_door import ENCRYPTED
from .upstream import bounded

if TYPE_CHECKING:
    from .app import Proxy

__all__ = ["KIND_PARAMS", "refused_param", "ruled"]

KIND_PARAMS = "refused_params"
"""Capability-ledger kind: top-level parameters a Responses route answered ``unknown_parameter`` for."""
_KEPT = frozenset({"model", "input", "stream", "store", "include"})
"""Never learned away: without them the request is another request."""


def refused_param(status: int, err: bytes, sent: Mapping[str, Any]) -> str | None:
    """The top-level parameter an ``unknown_parameter`` 400 names, when the request carried it."""
    if status != 400:
        return None
    try:
        doc = orjson.loads(err)
    except orjson.JSONDecodeError:
        return None
    e = doc.get("error") if isinstance(doc, dict) else None
    param = e.get("param") if isinstance(e, dict) and e.get("code") == "unknown_parameter" else None
    return param if isinstance(param, str) and param in sent and param not in _KEPT else None


def ruled(body: Mapping[str, Any], switches: Mapping[str, Any], values: Sequence[ValueRule],
          refused: Sequence[str] = ()) -> tuple[dict[str, Any], tuple[str, ...]]:
    """(``body`` under the route's rules, the names of what was added, changed or left out) —
    module docstring."""
    out = {k: v for k, v in body.items() if k not in refused}
    changed: list[str] = [k for k in refused if k in body]
    include = body.get("include")
    if body.get("store") is False and not (isinstance(include, list) and ENCRYPTED in include):
        out["include"] = [*(include if isinstance(include, list) else ()), ENCRYPTED]
        changed.append("include")
    for name, value in switches.items():
        cur = body.get(name)
        merged = value if name not in body else deep_merge(value, cur) if (
            isinstance(value, Mapping) and isinstance(cur, Mapping)) else cur
        if merged != cur or name not in body:
            out[name] = merged
            changed.append(name)
    if values and (fixed := apply_values(out, values)) is not out:
        changed += [r.path for r in values if _at(fixed, r.path) != _at(out, r.path)]
        out = fixed
    return out, tuple(changed)


def _at(body: Mapping[str, Any], path: str) -> Any:
    cur: Any = body
    for p in path.split("."):
        cur = cur.get(p) if isinstance(cur, Mapping) else None
    return cur


async def relay(proxy: Proxy, request: Request, row: Row, upstream: str, body: Mapping[str, Any],
                t0: float) -> Response:
    """The request, under the route's rules, to ``{upstream}/responses``; its answer as it comes."""
    target = proxy.target(row, upstream, str(body["model"]))
    url = f"{upstream}/responses"
    headers = proxy.headers(request, row)
    sent, changed = ruled(body, target.route.switches, proxy.lessons(target)[1], _refused(proxy, target))
    resp = await proxy.forward("POST", url, headers, orjson.dumps(sent))
    retry = RetryState()
    if app._may_learn(resp.status_code):
        err = await proxy.read(resp, url)
        problem = ProviderHTTPError("upstream refused the request", status=resp.status_code,
                                    body=err.decode("utf-8", "replace"), route=row.key,
                                    attempt=build(row.wire, row.must_echo, sent, (), ()))
        param = refused_param(resp.status_code, err, sent)
        if param is not None and proxy.ledger.learn(row.key, target.host, target.model, KIND_PARAMS, [param],
                                                    {"status": resp.status_code, "time": time.time(),
                                                     "error": " ".join(problem.body.split())[:300]}):
            retry.retried = True
            log_event("learned", route=row.key, host=target.host, model=target.model, params=param,
                      status=resp.status_code)
        elif not recover(proxy.ledger, None, target, problem, retry):
            _log(row, target.host, target.model, resp.status_code, t0, body, changed, retry)
            return app._back(Response(err, resp.status_code), resp)
        proxy.forget_lessons()
        sent, changed = ruled(body, target.route.switches, proxy.lessons(target)[1], _refused(proxy, target))
        resp = await proxy.forward("POST", url, headers, orjson.dumps(sent))
    await proxy.check(resp, url)
    _log(row, target.host, target.model, resp.status_code, t0, body, changed, retry)
    return app._back(StreamingResponse(bounded(resp, proxy.options.max_upstream_body), resp.status_code), resp)


def _refused(proxy: Proxy, target: Resolved) -> tuple[str, ...]:
    got = proxy.ledger.capabilities(target.route.key, target.host, target.model).get(KIND_PARAMS)
    return tuple(p for p in got if isinstance(p, str)) if isinstance(got, list) else ()


def _log(row: Row, host: str, model: str, status: int, t0: float, body: Mapping[str, Any], changed: Sequence[str],
         retry: RetryState) -> None:
    log_event("proxy", route=row.key, host=host, model=model, door="responses", stream=body.get("stream") is True,
              status=status, ms=round((time.perf_counter() - t0) * 1000, 1), retried=retry.retried,
              switches=list(changed))
