"""Sealed envelopes: what a route needs replayed, carried by the client in its own opaque field.

A front door (Anthropic Messages, Responses) hands its client reasoning in the client's native
carrier — a ``thinking`` block's ``signature``, a reasoning item's ``encrypted_content`` — and
the client is obliged to send it back unchanged. The proxy puts there an envelope only it can
open, holding the back route's own carriers (``reasoning_content``, ``reasoning_details``,
signatures, tool-id mapping), so a restarted proxy, or another worker sharing the key, restores
them with an empty memory.

Envelope: ``hseal1.<kid>.<base64url(nonce ‖ AES-256-GCM ciphertext ‖ tag)>``. The plaintext is
an 8-byte expiry (unix seconds, 0 = none) followed by the payload; the associated data binds the
envelope to its key id, tenant and route, so an envelope minted for one tenant (or route, or
deployment key) never opens for another. ``kid`` names the key (a hash prefix, never the key).

Keys live in ``$HERMES_HOME/proxy-seal.key`` (0600, created on first use), one base64url key a
line, ``#`` comments allowed: the **first** key seals, **every** key opens. To rotate, put a new
key on the first line and keep the old ones until the envelopes they sealed no longer matter
(a conversation still open with the old key loses its restore once the old line is removed).
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import hashlib
import os
import re
import secrets
import struct
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import orjson
from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

from ..core.errors import ConfigError

__all__ = ["KEY_FILE", "MAX_ENVELOPE", "PREFIX", "Sealer", "is_envelope", "load_keys"]

PREFIX = "hseal1"
KEY_FILE = "proxy-seal.key"
MAX_ENVELOPE = 8 << 20
"""The longest envelope ``open`` reads (characters); a longer one is refused unread."""
_NONCE = 12
_KID = 8
_EXP = struct.Struct(">Q")
_B64 = re.compile(r"[A-Za-z0-9_-]+")


def _b64e(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")


def _b64d(text: str) -> bytes:
    """Canonical base64url without padding, or ValueError: the decoder alone skips stray
    characters and ignores trailing bits, so an altered envelope could decode to the same bytes."""
    if not _B64.fullmatch(text):
        raise ValueError("not base64url")
    try:
        raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except (binascii.Error, ValueError):
        raise ValueError("not base64url") from None
    if _b64e(raw) != text:
        raise ValueError("not canonical base64url")
    return raw


def kid_of(key: bytes) -> str:
    """A short public name for a key: a hash prefix (the key is not recoverable from it)."""
    return hashlib.sha256(b"hseal-kid\0" + key).hexdigest()[:_KID]


def is_envelope(text: object) -> bool:
    """Whether ``text`` looks like one of ours (cheap; says nothing of whether it opens)."""
    return isinstance(text, str) and text.startswith(PREFIX + ".")


def _aad(kid: str, tenant: str, route: str) -> bytes:
    return orjson.dumps([PREFIX, kid, tenant, route])


def load_keys(path: Path) -> list[bytes]:
    """The keys in ``path``, creating it (0600, one fresh key) when absent. Two processes
    creating it at once agree on one file: the key is written aside and linked into place."""
    if not path.exists():
        path.parent.mkdir(parents=True, mode=0o700, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}")
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            with os.fdopen(fd, "w") as f:
                f.write("# hermes proxy seal keys: the first seals, all open (docs/proxy.md)\n")
                f.write(_b64e(AESGCM.generate_key(bit_length=256)) + "\n")
            with contextlib.suppress(FileExistsError):
                os.link(tmp, path)
        finally:
            with contextlib.suppress(OSError):
                tmp.unlink()
    try:
        lines = path.read_text("ascii").splitlines()
    except (OSError, UnicodeDecodeError) as e:
        raise ConfigError(f"cannot read {path}: {e}", hint="it holds the proxy's seal keys, one a line") from None
    keys = []
    for n, line in enumerate(lines, 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        try:
            key = _b64d(line)
        except ValueError:
            key = b""
        if len(key) != 32:
            raise ConfigError(f"{path}:{n}: not a 256-bit base64url key",
                              hint="each line is a key made by `python -c \"import secrets,base64;"
                                   "print(base64.urlsafe_b64encode(secrets.token_bytes(32)).decode().rstrip('='))\"`")
        keys.append(key)
    if not keys:
        raise ConfigError(f"{path} holds no key", hint="delete it to have a fresh one made, or add one")
    return keys


@dataclass(frozen=True)
class Sealer:
    """Seals with the first key, opens with any; ``ttl_s`` bounds an envelope's life."""

    keys: Sequence[bytes]
    ttl_s: float | None = None
    max_envelope: int = MAX_ENVELOPE
    clock: Callable[[], float] = time.time
    _ciphers: dict[str, AESGCM] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not self.keys:
            raise ConfigError("a sealer needs at least one key")
        ciphers: dict[str, AESGCM] = {}
        for k in self.keys:
            ciphers.setdefault(kid_of(k), AESGCM(k))
        object.__setattr__(self, "_ciphers", ciphers)

    @classmethod
    def load(cls, home: Path, *, ttl_s: float | None = None) -> Sealer:
        """The sealer of the deployment whose home is ``home`` (``$HERMES_HOME``)."""
        return cls(load_keys(Path(home) / KEY_FILE), ttl_s=ttl_s)

    @property
    def kid(self) -> str:
        """The id of the sealing key."""
        return kid_of(self.keys[0])

    def seal(self, payload: bytes, *, tenant: str, route: str) -> str:
        """An envelope only this deployment opens, and only for ``tenant`` on ``route``.
        ValueError when the envelope would be longer than ``max_envelope``."""
        if (len(payload) + _EXP.size + _NONCE + 16) * 4 // 3 + 24 > self.max_envelope:
            raise ValueError(f"payload of {len(payload)} bytes is past the envelope bound")
        kid = self.kid
        expires = int(self.clock() + self.ttl_s) if self.ttl_s is not None else 0
        nonce = secrets.token_bytes(_NONCE)
        body = self._ciphers[kid].encrypt(nonce, _EXP.pack(expires) + payload, _aad(kid, tenant, route))
        return f"{PREFIX}.{kid}.{_b64e(nonce + body)}"

    def open(self, envelope: object, *, tenant: str, route: str) -> bytes | None:
        """The payload, or None for anything not sealed here for this tenant and route, altered,
        expired, or too long: a client's carrier is never trusted, and never raises."""
        if not isinstance(envelope, str) or len(envelope) > self.max_envelope:
            return None
        parts = envelope.split(".")
        if len(parts) != 3 or parts[0] != PREFIX:
            return None
        cipher = self._ciphers.get(parts[1])
        if cipher is None:
            return None
        try:
            raw = _b64d(parts[2])
        except ValueError:
            return None
        if len(raw) < _NONCE + 16 + _EXP.size:
            return None
        try:
            plain = cipher.decrypt(raw[:_NONCE], raw[_NONCE:], _aad(parts[1], tenant, route))
        except InvalidTag:
            return None
        (expires,) = _EXP.unpack_from(plain)
        if expires and self.clock() >= expires:
            return None
        return plain[_EXP.size:]
