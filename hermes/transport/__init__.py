"""Sending a built body: HTTP with SSE for most routes, botocore for Bedrock.

:class:`Transport` is what the agent, the builder and the compactor are handed: a request's
bytes out, the answer's bytes (or its streamed text) back, every failure already a typed
``ProviderError``. ``http.HttpTransport`` (httpx: retries, error mapping) implements it; a
route with ``auth = "aws"`` goes through ``aws.call`` instead and takes no transport.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Protocol, Self

__all__ = ["StreamedAnswer", "Transport"]


class StreamedAnswer(Protocol):
    """A streamed answer, as its reader sees it: the body's text as it arrives."""

    def iter_text(self) -> Iterator[str]: ...


class Transport(Protocol):
    """The HTTP seam. Every method is one request (with the implementation's retries)."""

    def post_json(self, url: str, body: bytes, headers: Mapping[str, str], *, route: str) -> tuple[int, bytes]:
        """POST ``body`` and read the whole answer: (status, raw body); an error status raises."""
        ...

    def stream(self, url: str, body: bytes, headers: Mapping[str, str], *,
               route: str) -> AbstractContextManager[StreamedAnswer]:
        """POST ``body`` for a streamed answer; an error status raises before the block runs,
        a stream that breaks off raises ``StreamError``."""
        ...

    def close(self) -> None: ...

    def __enter__(self) -> Self: ...

    def __exit__(self, *exc: object) -> None: ...


if TYPE_CHECKING:  # the implementation is checked against the protocol
    from .http import HttpTransport

    _TRANSPORTS: tuple[type[Transport], ...] = (HttpTransport,)
