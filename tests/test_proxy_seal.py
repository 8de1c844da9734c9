"""Sealed envelopes (hermes/proxy/seal.py): what opens, what never does, the key file."""

from __future__ import annotations

import stat
import threading
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hermes.core.errors import ConfigError
from hermes.proxy.seal import KEY_FILE, Sealer, is_envelope, load_keys

K1, K2 = bytes(range(32)), bytes(range(1, 33))
S = Sealer([K1])
names = st.text(max_size=40)
payloads = st.binary(max_size=2048)


@settings(max_examples=200, deadline=None)
@given(payloads, names, names)
def test_roundtrip(payload: bytes, tenant: str, route: str) -> None:
    env = S.seal(payload, tenant=tenant, route=route)
    assert is_envelope(env) and env.isascii()
    assert S.open(env, tenant=tenant, route=route) == payload


@settings(max_examples=300, deadline=None)
@given(payloads, st.data())
def test_an_envelope_altered_anywhere_never_opens(payload: bytes, data: st.DataObject) -> None:
    env = S.seal(payload, tenant="t", route="deepseek")
    i = data.draw(st.integers(0, len(env) - 1))
    kind = data.draw(st.sampled_from(["replace", "delete", "insert"]))
    c = data.draw(st.characters(codec="ascii"))
    if kind == "replace":
        c = c if c != env[i] else chr((ord(c) + 1) % 128)
        bad = env[:i] + c + env[i + 1:]
    elif kind == "delete":
        bad = env[:i] + env[i + 1:]
    else:
        bad = env[:i] + c + env[i:]
    assert bad != env
    assert S.open(bad, tenant="t", route="deepseek") is None


@settings(max_examples=100, deadline=None)
@given(payloads, names, names, names, names)
def test_another_tenant_or_route_never_opens(payload: bytes, t1: str, t2: str, r1: str, r2: str) -> None:
    env = S.seal(payload, tenant=t1, route=r1)
    if (t1, r1) != (t2, r2):
        assert S.open(env, tenant=t2, route=r2) is None


def test_another_deployment_key_never_opens_and_rotation_keeps_old_envelopes() -> None:
    old = Sealer([K1]).seal(b"x", tenant="t", route="r")
    assert Sealer([K2]).open(old, tenant="t", route="r") is None  # a foreign deployment
    rotated = Sealer([K2, K1])
    assert rotated.open(old, tenant="t", route="r") == b"x"  # old envelopes still open
    new = rotated.seal(b"y", tenant="t", route="r")
    assert new.split(".")[1] == Sealer([K2]).kid != Sealer([K1]).kid
    assert Sealer([K1]).open(new, tenant="t", route="r") is None  # the new key seals


def test_expiry() -> None:
    now = [1000.0]
    s = Sealer([K1], ttl_s=60, clock=lambda: now[0])
    env = s.seal(b"x", tenant="t", route="r")
    now[0] = 1059.0
    assert s.open(env, tenant="t", route="r") == b"x"
    now[0] = 1060.0
    assert s.open(env, tenant="t", route="r") is None


@pytest.mark.parametrize("junk", [None, 3, "", "hseal1", "hseal1..", "hseal1.x.y", "hseal2.aaaaaaaa.AAAA",
                                  "hseal1." + S.kid + ".", "hseal1." + S.kid + ".AAAA", b"hseal1"])
def test_junk_never_raises(junk: object) -> None:
    assert S.open(junk, tenant="t", route="r") is None


def test_size_bounds() -> None:
    small = Sealer([K1], max_envelope=200)
    with pytest.raises(ValueError):
        small.seal(b"x" * 200, tenant="t", route="r")
    env = S.seal(b"x" * 200, tenant="t", route="r")
    assert small.open(env, tenant="t", route="r") is None  # longer than the bound: refused unread
    assert small.open(small.seal(b"x" * 50, tenant="t", route="r"), tenant="t", route="r") == b"x" * 50


def test_key_file_created_0600_once_and_shared(tmp_path: Path) -> None:
    home = tmp_path / "home"
    sealers: list[Sealer] = []
    threads = [threading.Thread(target=lambda: sealers.append(Sealer.load(home))) for _ in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    path = home / KEY_FILE
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert len({s.kid for s in sealers}) == 1  # every process agrees on the one key
    assert [p.name for p in home.iterdir()] == [KEY_FILE]  # no temporary file left
    env = sealers[0].seal(b"x", tenant="t", route="r")
    assert Sealer.load(home).open(env, tenant="t", route="r") == b"x"  # a restart opens it


def test_bad_key_file_is_a_config_error(tmp_path: Path) -> None:
    p = tmp_path / KEY_FILE
    p.write_text("# only a comment\n")
    with pytest.raises(ConfigError, match="no key"):
        load_keys(p)
    p.write_text("c2hvcnQ\n")
    with pytest.raises(ConfigError, match=":1: not a 256-bit"):
        load_keys(p)
