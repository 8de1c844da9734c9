"""The botocore transport: Bedrock's requests, signed (SigV4) and decoded (binary event stream).

A route with ``auth = "aws"`` sends through here instead of ``transport.http.HttpTransport``;
the wire (``wire.bedrock``) stays pure translation. Both transports feed the same ``Decoder`` and map a
provider's refusal through the same ``transport.error_from_response``.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any

import orjson

from ..core.errors import (
    ConfigError,
    HermesError,
    ProviderConnectionError,
    ProviderHTTPError,
    StreamError,
    register_secret,
)
from ..core.stream import Delta
from ..routing.resolve import Resolved
from ..wire import Decoder
from ..wire.bedrock import _DECODER, _PARSE_ERRORS, _malformed, _region, decode_event, from_wire

__all__ = ["call", "parse_converse", "stream_deltas"]


_CLIENTS: dict[tuple[Any, ...], Any] = {}
_CLIENTS_LOCK = threading.Lock()


def _client(resolved: Resolved) -> Any:
    """A bedrock-runtime client for this endpoint and these credentials (cached: building one
    costs botocore a few hundred milliseconds; clients are thread-safe)."""
    import botocore.session
    from botocore.config import Config

    session = botocore.session.get_session()
    creds = session.get_credentials()
    bearer = os.environ.get("AWS_BEARER_TOKEN_BEDROCK")
    if creds is None and not bearer:
        raise ConfigError("no AWS credentials for Bedrock",
                          hint="set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (or AWS_PROFILE), "
                               "or AWS_BEARER_TOKEN_BEDROCK")
    frozen = creds.get_frozen_credentials() if creds is not None else None
    if frozen is not None:
        register_secret(frozen.secret_key)
        register_secret(frozen.token)
    register_secret(bearer)
    attempts = int(os.environ.get("AWS_MAX_ATTEMPTS") or 3)
    mode = os.environ.get("AWS_RETRY_MODE") or "standard"
    key = (resolved.base_url, _region(), attempts, mode, bearer, tuple(frozen) if frozen else None)
    with _CLIENTS_LOCK:
        client = _CLIENTS.get(key)
        if client is None:
            config = Config(retries={"mode": mode, "total_max_attempts": attempts}, read_timeout=300,
                            connect_timeout=30, user_agent_extra="hermes")
            client = session.create_client("bedrock-runtime", region_name=_region(),
                                           endpoint_url=resolved.base_url or None, config=config)
            if len(_CLIENTS) >= 8:
                _CLIENTS.pop(next(iter(_CLIENTS))).close()
            _CLIENTS[key] = client
    return client


def call(resolved: Resolved, body: Mapping[str, Any], *, stream: bool, feed: Callable[[Sequence[Delta]], None],
         decoder: Decoder = _DECODER) -> None:
    """Send ``body`` with botocore (SigV4 from the standard AWS chain) and feed the deltas.

    This is the route's transport (``auth = "aws"``): botocore signs the request and decodes
    the binary event stream; ``decoder`` turns its events and whole responses into deltas,
    as on every other wire. Bedrock authenticates with AWS credentials (or botocore's own
    ``AWS_BEARER_TOKEN_BEDROCK``), never an API key.
    """
    from botocore.exceptions import BotoCoreError, ClientError

    route = resolved.route.key
    client = _client(resolved)
    try:
        if not stream:
            with _malformed(route):
                payload = client.converse(**body)
            feed(decoder.from_wire(payload))
            return
        events = client.converse_stream(**body)["stream"]
        try:
            for name, data in _iter_events(events, route):
                feed(decoder.decode_event(name, data))
        finally:
            events.close()
    except ClientError as e:
        raise _client_error(e, route) from None
    except BotoCoreError as e:
        raise _boto_error(e, route) from None


def parse_converse(raw: bytes, shape: Any, route: str) -> list[Delta]:
    """A Converse HTTP 200 body parsed the way ``client.converse`` does (botocore's REST-JSON
    parser against the ``Converse`` output shape), then :func:`from_wire`. Used by the fuzzer to
    drive the real parse without a network round trip."""
    from botocore.parsers import RestJSONParser

    with _malformed(route):
        payload = RestJSONParser().parse({"status_code": 200, "headers": {}, "body": raw}, shape)
    return from_wire(payload)


def stream_deltas(events: Any, route: str, feed: Callable[[Sequence[Delta]], None]) -> None:
    """Feed the deltas of a botocore ``EventStream`` (ConverseStream's ``stream`` member)."""
    for name, data in _iter_events(events, route):
        feed(decode_event(name, data))


def _iter_events(events: Any, route: str) -> Iterator[tuple[str, Any]]:
    from botocore.eventstream import ParserError
    from botocore.exceptions import BotoCoreError, EventStreamError
    from botocore.parsers import ResponseParserError
    from urllib3.exceptions import HTTPError as Urllib3Error

    it = iter(events)
    while True:
        try:
            event = next(it)
        except StopIteration:
            return
        except EventStreamError as e:
            err = e.response.get("Error", {})
            raise StreamError(f"{route}: stream failed with {err.get('Code', 'error')}: "
                              f"{err.get('Message', '')}; nothing was stored") from None
        except ParserError as e:
            raise StreamError(f"{route}: malformed event-stream frame ({e}); nothing was stored") from None
        except (BotoCoreError, OSError, Urllib3Error) as e:
            raise StreamError(f"{route}: stream broke off ({e}); nothing was stored") from None
        except (*_PARSE_ERRORS, ResponseParserError) as e:  # botocore's event payload parser: bad JSON / wrong member types
            raise StreamError(f"{route}: malformed event ({type(e).__name__}: {str(e)[:120]}); "
                              "nothing was stored") from None
        if not isinstance(event, Mapping):
            raise StreamError(f"{route}: malformed event ({type(event).__name__}); nothing was stored")
        yield from event.items()


def _client_error(e: Any, route: str) -> ProviderHTTPError:
    """botocore's ``ClientError`` as the same typed error an HTTP refusal becomes."""
    from .http import error_from_response

    err = e.response.get("Error", {})
    meta = e.response.get("ResponseMetadata", {})
    code = str(err.get("Code") or "UnknownError")
    body = orjson.dumps({"__type": code, "message": str(err.get("Message") or "")}).decode()
    return error_from_response(int(meta.get("HTTPStatusCode") or 0), body, meta.get("HTTPHeaders") or {}, route,
                               code=code)


def _boto_error(e: Exception, route: str) -> HermesError:
    from botocore.exceptions import ConnectionError as BotoConnectionError
    from botocore.exceptions import NoCredentialsError, ParamValidationError

    if isinstance(e, ParamValidationError):
        return HermesError(f"{route}: botocore refused the request before sending it: {e}",
                           hint="a Converse field is misspelled or has the wrong type")
    if isinstance(e, NoCredentialsError):
        return ConfigError("no AWS credentials for Bedrock", hint="set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY")
    if isinstance(e, BotoConnectionError):
        return ProviderConnectionError(f"{route}: cannot reach Bedrock: {e}")
    return StreamError(f"{route}: {type(e).__name__}: {e}; nothing was stored")
