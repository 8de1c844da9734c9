"""Route resolution: provider names, host matching (lookalikes, ports, IPv6, private ranges),
user overrides in routes.toml and their errors."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hermes.config.urlpolicy import check_base_url
from hermes.core.errors import ConfigError, RouteError
from hermes.routing.resolve import host_matches, is_local_host, load_table, resolve


@pytest.mark.parametrize("url,key", [
    ("https://openrouter.ai/api/v1", "openrouter"),
    ("https://inference-api.nousresearch.com/v1", "nous"),
    ("https://staging.inference-api.nousresearch.com/v1", "nous"),
    ("https://api.deepseek.com", "deepseek"),
    ("https://api.deepseek.com:8443/v1", "deepseek"),
    ("https://API.DeepSeek.com./v1", "deepseek"),
    ("https://api.groq.com/openai/v1", "groq"),
    ("https://api.hunyuan.cloud.tencent.com/v1", "hunyuan"),
    ("https://api.moonshot.cn/v1", "kimi"),
    ("https://api.minimaxi.com/v1", "minimax"),
    ("https://ai-gateway.vercel.sh/v1", "vercel"),
    ("https://api.githubcopilot.com", "copilot"),
    ("https://generativelanguage.googleapis.com/v1beta/openai", "gemini-openai"),
    ("https://generativelanguage.googleapis.com/v1beta", "gemini"),
    ("https://bedrock-runtime.us-east-1.amazonaws.com", "bedrock"),
    ("https://bedrock-runtime-fips.us-gov-west-1.amazonaws.com", "bedrock"),
    ("https://open.bigmodel.cn/api/paas/v4", "glm"),
    # lookalikes and hosts inside paths never match
    ("https://nousresearch.com.evil.io/v1", "generic"),
    ("https://api.deepseek.com.example.org/v1", "generic"),
    ("https://evil.io/api.deepseek.com/v1", "generic"),
    ("https://notopenrouter.ai/v1", "generic"),
    ("https://s3.us-east-1.amazonaws.com", "generic"),
    ("https://bedrock-runtime.amazonaws.com.evil.io", "generic"),
    # local servers
    ("http://127.0.0.1:8080/v1", "local"),
    ("http://localhost:11434/v1", "local"),
    ("http://[::1]:8000/v1", "local"),
    ("http://10.1.2.3/v1", "local"),
    ("http://192.168.1.20:1234/v1", "local"),
    ("http://172.20.0.5/v1", "local"),
    ("http://100.100.1.1/v1", "local"),
    ("http://gpu-box.localhost/v1", "local"),
    ("http://172.32.0.5/v1", "generic"),
    ("http://8.8.8.8/v1", "generic"),
])
def test_the_host_decides_without_a_provider(url, key):
    assert resolve(None, url, "m").route.key == key


def test_provider_names_the_row_and_base_url_only_changes_the_host():
    r = resolve("deepseek", "http://127.0.0.1:9999/v1", "deepseek-v4")
    assert r.route.key == "deepseek" and r.host == "127.0.0.1" and r.route.must_echo
    assert resolve("custom", "https://api.groq.com/openai/v1", "m").route.key == "generic"
    assert resolve("KiloCode", None, "m").route.key == "kilo"


def test_host_matching_is_label_exact():
    assert host_matches("a.b.example.com", "example.com")
    assert not host_matches("badexample.com", "example.com")
    assert host_matches("bedrock-runtime.eu-west-1.amazonaws.com", "bedrock-runtime.*.amazonaws.com")
    assert not host_matches("bedrock-runtime.amazonaws.com", "bedrock-runtime.*.amazonaws.com")
    assert is_local_host("[::1]") and is_local_host("::ffff:127.0.0.1") and not is_local_host("example.com")


def test_unknown_provider_is_a_route_error_with_a_suggestion():
    with pytest.raises(RouteError) as e:
        resolve("deepsek", None, "m")
    assert "unknown provider 'deepsek'" in str(e.value) and "deepseek" in e.value.hint


def test_missing_inputs_are_route_errors():
    with pytest.raises(RouteError):
        resolve(None, None, "m")
    with pytest.raises(RouteError):
        resolve("generic", None, "m")
    with pytest.raises(RouteError):
        resolve("deepseek", None, "")
    with pytest.raises(RouteError):
        resolve(None, "http:///nohost", "m")


def test_user_rows_add_and_override(tmp_path):
    f = tmp_path / "routes.toml"
    f.write_text(
        '[[route]]\nkey = "corp"\nwire = "openai_chat"\nhosts = ["llm.corp.example"]\n'
        'carriers = ["reasoning_content", "reasoning"]\nmust_echo = true\n'
        '[route.switches]\nchat_template_kwargs = { preserve_thinking = true }\n'
        '[[route]]\nkey = "deepseek"\ncarriers = []\nmust_echo = false\n'
        '[[route]]\nkey = "nousresearch-mirror"\nwire = "openai_chat"\nhosts = ["nousresearch.com"]\ncarriers = ["reasoning_content"]\n'
    )
    table = load_table(f)
    corp = resolve(None, "https://gpu.llm.corp.example/v1", "qwen", table=table)
    assert corp.route.key == "corp" and corp.route.must_echo and corp.route.source == str(f)
    assert corp.route.carriers == {"reasoning_content", "reasoning"}
    ds = resolve("deepseek", None, "deepseek-v4", table=table)
    assert ds.route.strict and not ds.route.must_echo and ds.route.base_url == "https://api.deepseek.com"
    # user rows are searched before built-ins
    assert resolve(None, "https://inference-api.nousresearch.com", "m", table=table).route.key == "nousresearch-mirror"


@pytest.mark.parametrize("content,needle,line", [
    ('[[route]]\nkey = "x"\nwire = "openai_chat"\ncarriers = ["reasoning_contnet"]\n', "unknown carrier", 1),
    ('# c\n\n[[route]]\nkey = "x"\n', "needs 'wire'", 3),
    ('[[route]]\nkey = "ok"\nwire = "openai_chat"\n[[route]]\nkey = "y"\nwire = "smoke"\n', "wire", 4),
    ('[[route]]\nkey = "x"\nwire = "openai_chat"\nmust_echo = "yes"\n', "true or false", 1),
    ('[[route]]\nkey = "x"\nwire = "openai_chat"\ncolour = "red"\n', "unknown field", 1),
    ('[[route]\nkey = "x"\n', "invalid TOML", 1),
    ('[routes]\nkey = "x"\n', "unknown top-level", 1),
    ('[[route]]\nkey = "Bad Key"\n', "key", 1),
])
def test_malformed_routes_toml_names_file_and_line(tmp_path, content, needle, line):
    f = tmp_path / "routes.toml"
    f.write_text(content)
    with pytest.raises(ConfigError) as e:
        load_table(f)
    assert needle in str(e.value)
    assert str(e.value).startswith(f"{f}:{line}:")


@given(st.text(alphabet=st.characters(max_codepoint=0x300), max_size=40))
def test_a_base_url_with_space_control_or_backslash_is_refused_and_only_then(tail: str) -> None:
    """The character rule of ``check_base_url``: anything at or below space, DEL and backslash
    are refused wherever they stand; every other character passes this rule."""
    url = "https://example.com/" + tail.replace("@", "")
    bad = any(ord(ch) <= 0x20 or ord(ch) == 0x7F or ch == "\\" for ch in url)
    if bad:
        with pytest.raises(RouteError, match="spaces, control characters or backslashes"):
            check_base_url(url)
    else:
        check_base_url(url)
