"""Property tests for the two pure rules the attacks above rely on: which base URLs a client
may name, and what text may reach a terminal."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hermes.cli.terminal import printable
from hermes.config.urlpolicy import base_url_allowed, check_base_url
from hermes.core.errors import RouteError

ALLOW = "http://127.0.0.1:9000/v1"
hosts = st.sampled_from(["127.0.0.1", "localhost", "127.0.0.2", "evil.example", "127.0.0.1.evil.example"])
ports = st.sampled_from([9000, 9001, 80, 443])
paths = st.lists(st.sampled_from(["v1", "v1evil", "chat", "..", "%2e%2e", "x"]), max_size=3).map("/".join)
schemes = st.sampled_from(["http", "https", "ftp"])


@settings(deadline=None)  # timing is not the property; the machine may be loaded
@given(schemes, hosts, ports, paths, st.sampled_from(["", "user:pw@", "user@"]))
def test_only_the_allowlisted_prefix_passes(scheme: str, host: str, port: int, path: str, userinfo: str) -> None:
    url = f"{scheme}://{userinfo}{host}:{port}/{path}"
    segments = path.split("/") if path else []
    expected = (scheme, host, port) == ("http", "127.0.0.1", 9000) and segments[:1] == ["v1"] and ".." not in segments
    if userinfo:
        try:
            base_url_allowed(url, default="", allowlist=(ALLOW,))
        except RouteError as e:
            assert "pw" not in str(e) and "user@" not in str(e)
        else:
            raise AssertionError("userinfo passed")
        return
    if scheme == "ftp":  # not a base URL at all: refused with a reason, not only "not allowed"
        with pytest.raises(RouteError, match="must start with http:// or https://"):
            base_url_allowed(url, default="", allowlist=(ALLOW,))
        return
    assert base_url_allowed(url, default="", allowlist=(ALLOW,)) == expected


@settings(deadline=None)  # timing is not the property; the machine may be loaded
@given(st.sampled_from(["http://", "https://", "", "//"]), st.text(max_size=30), st.text(max_size=30))
def test_a_password_in_a_url_is_refused_and_never_repeated(scheme: str, before: str, after: str) -> None:
    secret = "pw-Zq81-never-shown"
    url = f"{scheme}user:{secret}@{before.replace('/', '')}{after}"
    try:
        check_base_url(url)
    except RouteError as e:
        assert secret not in str(e) + e.hint
    else:
        raise AssertionError(f"{url!r} passed")


@settings(deadline=None)  # timing is not the property; the machine may be loaded
@given(st.text(alphabet=st.characters(min_codepoint=0, max_codepoint=0x2FF)))
def test_printable_leaves_no_control_character(text: str) -> None:
    out = printable(text)
    assert not any((ord(c) < 0x20 and c not in "\n\t") or 0x7F <= ord(c) <= 0x9F for c in out)
    assert printable(out) == out
    keep = "".join(c for c in text if c.isalnum() or c == " ")
    if "\x1b" not in text and "\x9b" not in text and "\x9d" not in text:
        assert "".join(c for c in out if c.isalnum() or c == " ") == keep  # plain text is untouched
