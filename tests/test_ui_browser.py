"""The web view in a real headless Chromium, served by a real `hermes gateway` process.

One scenario, built once for the module with the real CLI against the emulators: a DeepSeek
tool turn whose reasoning quotes ``<script>``, a switch to OpenRouter that is rejected for
``reasoning_details`` (learned, retried), a switch to Anthropic, back to DeepSeek (which must
get a placeholder for Anthropic's text-less turns), and a branch continued on DeepSeek. Then the browser logs in with the gateway token, reads the chips on the right
turns, follows the branch, watches a live request appear; and every served page is swept for
secrets. One browser for the module keeps this fast.

Needs Debian's ``chromium`` (scripts/check installs it when running as root) and the
``playwright`` Python package, which drives that binary (no browser download).
Set ``HERMES_UI_SCREENSHOTS=DIR`` to save the three pages' screenshots there (docs/img).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest

from hermes.core.messages import Reasoning, blob_hash
from hermes.store import Store

CHROMIUM = os.environ.get("HERMES_CHROMIUM", "/usr/bin/chromium")
if not Path(CHROMIUM).exists():
    pytest.skip(f"{CHROMIUM} not found: install Debian's chromium (apt-get install chromium) to run the "
                "browser tests (scripts/check does when run as root)", allow_module_level=True)
sync_api = pytest.importorskip("playwright.sync_api", reason="the playwright package drives chromium: "
                               "pip install playwright (no `playwright install` needed)")

CANARY = "sk-canary-9f8e7d6c5b4a39281706"
TOKEN = "gw-ui-token-7c1d2e3f4a5b6c7d"
AWS_SECRET = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"
SECRETS = (CANARY, TOKEN, AWS_SECRET)
EMPTY_TITLE = "never answered"
SHOTS = os.environ.get("HERMES_UI_SCREENSHOTS")  # read now: the conftest clears HERMES_* per test
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
        "--disable-background-networking", "--disable-component-update", "--disable-sync"]


@dataclass
class World:
    home: Path
    url: str
    """The gateway's base URL."""
    main: str
    branch: str
    env: dict[str, str]
    emulator: Any

    @property
    def ui(self) -> str:
        return self.url + "/ui"


def _env(home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HERMES_", "AWS_")) and not k.endswith("_API_KEY")}
    return {**env, "HERMES_HOME": str(home), "HERMES_API_KEY": CANARY, "AWS_SECRET_ACCESS_KEY": AWS_SECRET,
            "AWS_ACCESS_KEY_ID": "AKIDEXAMPLE", "AWS_REGION": "us-east-1"}


def _cli(env: dict[str, str], cwd: Path, *args: str) -> Any:
    r = subprocess.run([sys.executable, "-m", "hermes", *args], capture_output=True, text=True, env=env,
                       cwd=cwd, timeout=120)
    assert r.returncode == 0, r.stderr
    return orjson.loads(r.stdout) if r.stdout.lstrip().startswith("{") else r.stdout


@pytest.fixture(scope="module")
def world(emulator: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    root = tmp_path_factory.mktemp("ui-world")
    home, work = root / "home", root / "work"
    work.mkdir()
    (work / "notes.txt").write_text("Hermes keeps reasoning.\n")
    env = _env(home)
    ds = ["-p", "deepseek", "-m", "deepseek-v4", "-u", emulator.url("deepseek"), "--json"]
    main = _cli(env, work, "chat", "-q", "What is <script>window.__pwned=1</script> here?", *ds)["session_id"]
    emulator.state.set_control("openrouter", reject_fields=["reasoning_details"])
    try:
        _cli(env, work, "chat", "--resume", main, "-q", "Summarise it.", "-p", "openrouter",
             "-m", "anthropic/claude-sonnet-4.5", "-u", emulator.url("openrouter"), "--json")
    finally:
        emulator.state.set_control("openrouter", reject_fields=[])
    _cli(env, work, "chat", "--resume", main, "-q", f"Is {TOKEN} safe to paste?", "-p", "anthropic",
         "-m", "claude-opus-5", "-u", emulator.url("anthropic"), "--json")
    _cli(env, work, "chat", "--resume", main, "-q", "Back to DeepSeek.", *ds)
    branch = _cli(env, work, "sessions", "branch", main, "--at", "3", "--json")["id"]
    _cli(env, work, "chat", "--resume", branch, "-q", "Another way?", *ds)
    # a 0-message session as older versions stored after a failed first turn: never listed
    Store(home / "state.db").create_session(provider="deepseek", model="deepseek-v4", title=EMPTY_TITLE)
    gw_env = {**env, "HERMES_GATEWAY_TOKEN": TOKEN}
    err = root / "gateway.err"
    proc = subprocess.Popen([sys.executable, "-m", "hermes", "gateway", "--port", "0", "--allow-base-url",
                             emulator.root], env=gw_env, cwd=work,
                            stdout=subprocess.DEVNULL, stderr=err.open("wb"))
    try:
        deadline = time.monotonic() + 20
        while "listening on " not in (err.read_text() if err.exists() else ""):
            assert proc.poll() is None and time.monotonic() < deadline, err.read_text()
            time.sleep(0.05)
        url = err.read_text().split("listening on ", 1)[1].split()[0]
        yield World(home, url, main, branch, env, emulator)
    finally:
        proc.terminate()
        proc.wait(30)


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield b
        b.close()


def login(browser: Any, world: World, target: str = "/") -> Any:
    ctx = browser.new_context(viewport={"width": 1180, "height": 720})
    page = ctx.new_page()
    page.goto(world.ui + target)
    page.fill("#token", TOKEN)
    page.click("#login")
    page.wait_for_load_state()
    return page


@pytest.fixture(scope="module")
def page(browser: Any, world: World) -> Iterator[Any]:
    p = login(browser, world)
    yield p
    p.context.close()


def shoot(page: Any, name: str) -> None:
    if SHOTS:
        Path(SHOTS).mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(Path(SHOTS) / name))


# ----------------------------------------------------------------------------- tests


def test_login_form_sets_an_httponly_cookie_and_lands_on_the_asked_page(browser: Any, world: World) -> None:
    ctx = browser.new_context()
    page = ctx.new_page()
    page.goto(f"{world.ui}/s/{world.main}")
    assert "/ui/login" in page.url
    page.fill("#token", "not-the-token")
    page.click("#login")
    page.locator("#login-error").wait_for()
    assert not ctx.cookies()
    page.fill("#token", TOKEN)
    page.click("#login")
    page.wait_for_url(f"**/ui/s/{world.main}")
    (cookie,) = ctx.cookies()
    assert cookie["httpOnly"] and cookie["sameSite"] == "Strict" and cookie["path"] == "/ui/"
    assert page.evaluate("document.cookie") == ""  # no script can read the token
    page.click("button:has-text('Log out')")
    page.wait_for_url("**/ui/login")
    assert not ctx.cookies()
    ctx.close()


def test_sessions_list_is_searchable(page: Any, world: World) -> None:
    page.goto(world.ui + "/")
    rows = page.locator("#sessions tbody tr")
    assert rows.count() == 2
    branch_row = page.locator(f"#sessions tbody tr:has(a:text-is('{world.branch}'))")
    assert world.main in branch_row.inner_text()  # branch parent column
    assert EMPTY_TITLE not in page.locator("#sessions").inner_text()  # the 0-message session is not a row
    shoot(page, "ui-sessions.png")
    page.fill("#q", world.branch[:6])
    sync_api.expect(page.locator("#sessions tbody tr:not([hidden])")).to_have_count(1)  # (no eval: the CSP forbids it)
    assert page.locator("#count").inner_text() == "1 session"


def test_timeline_chips_origins_and_blob_hashes_on_the_right_turns(page: Any, world: World) -> None:
    page.goto(f"{world.ui}/s/{world.main}")
    history = Store(world.home / "state.db").load(world.main)
    assistants = [i for i, m in enumerate(history) if m.role == "assistant"]
    assert len(assistants) == 8
    for seq in assistants:
        parts = [p for p in history[seq].parts if isinstance(p, Reasoning)]
        chips = page.locator(f"#m{seq} .who .chip.carrier").all_inner_texts()
        origin = parts[0].origin.provider
        want = {"deepseek": ["text"], "openrouter": ["text", "openrouter.details"],
                "anthropic": ["text", "anthropic.signature"]}[origin]  # Opus 5 is asked for summarized thinking
        assert chips == want, (seq, origin)
        summary = page.locator(f"#m{seq} details.reasoning summary").first.inner_text()
        assert f"from {origin}@127.0.0.1/" in summary
        if parts[0].blob:
            assert f"sha256:{blob_hash(parts[0].blob)[:12]}" in summary


def test_timeline_shows_the_route_of_each_turn(page: Any, world: World) -> None:
    page.goto(f"{world.ui}/s/{world.main}")
    history = Store(world.home / "state.db").load(world.main)
    seen = []
    for seq, m in enumerate(history):
        if m.role != "assistant":
            continue
        origin = next(p for p in m.parts if isinstance(p, Reasoning)).origin
        who = page.locator(f"#m{seq} .who")
        assert who.locator(".turn-route").inner_text() == origin.provider, seq
        assert who.locator(".turn-model").inner_text() == origin.model, seq
        seen.append(origin.provider)
    # the session switched twice and came back: each turn says where it went, not only the last
    assert list(dict.fromkeys(seen)) == ["deepseek", "openrouter", "anthropic"] and seen[-1] == "deepseek"
    assert page.locator("#current-route").inner_text() == "deepseek"


def test_reasoning_with_script_renders_as_text(page: Any, world: World) -> None:
    page.goto(f"{world.ui}/s/{world.main}")
    details = page.locator("#m1 details.reasoning").first
    details.locator("summary").click()
    thought = details.locator("pre.thought").inner_text()
    assert "<script>window.__pwned=1</script>" in thought
    assert page.evaluate("window.__pwned") is None
    assert page.locator("script").count() == 1  # ours only
    assert page.locator("#m0 .text").inner_text() == "What is <script>window.__pwned=1</script> here?"
    shoot(page, "ui-session.png")


def test_request_matrix_shows_switches_learned_retry_and_per_turn_decisions(page: Any, world: World) -> None:
    page.goto(f"{world.ui}/s/{world.main}")
    page.click("#requests-link")
    page.wait_for_selector("#matrix")
    heads = page.locator("#matrix thead tr").first.locator("th.req")
    routes = [heads.nth(i).get_attribute("data-route") for i in range(heads.count())]
    # requests that went on alike are one column: DeepSeek #1–2, Anthropic #6–7, DeepSeek #8–9
    assert routes == ["deepseek", "openrouter", "openrouter", "openrouter", "anthropic", "deepseek"]
    assert [heads.nth(i).get_attribute("id") for i in range(heads.count())] == ["r2", "r3", "r4", "r5", "r7", "r9"]
    assert "#1–2" in heads.first.inner_text()
    classes = [heads.nth(i).get_attribute("class") or "" for i in range(heads.count())]
    assert ["switch" in c for c in classes] == [False, True, False, False, True, True]
    failed, retry = heads.nth(2), heads.nth(3)
    assert "HTTP 400" in failed.inner_text() and "learned" in failed.inner_text()
    assert "retry" in retry.inner_text()

    def chip(seq: int, req: int, carrier: str) -> Any:
        return page.locator(f"#t{seq} td[data-req='{req}'][data-carrier='{carrier}'] .chip")

    assert chip(1, 2, "reasoning_content").inner_text() == "sent"  # DeepSeek echoes its own turn
    assert chip(5, 4, "reasoning_details").inner_text() == "sent"  # what OpenRouter rejected ...
    assert chip(5, 5, "reasoning_details").count() == 0  # ... and the retry left out
    assert chip(5, 5, "reasoning_content").inner_text() == "sent"
    drop = chip(1, 7, "dropped")
    assert drop.inner_text() == "dropped" and drop.get_attribute("title") == "anthropic takes only signed reasoning"
    drop.hover()  # the reason is the chip's hover text
    assert chip(9, 7, "anthropic.signature").inner_text() == "sent"
    # back on DeepSeek: Anthropic's tool turn goes as its summarized text (its signature stays behind)
    assert chip(9, 9, "reasoning_content").inner_text() == "sent"
    assert chip(1, 9, "reasoning_content").inner_text() == "sent"
    page.set_viewport_size({"width": 1480, "height": 600})
    shoot(page, "ui-requests.png")
    page.set_viewport_size({"width": 1180, "height": 720})


_LAYOUT = """() => {
  const main = document.querySelector('main'), table = document.getElementById('matrix');
  const box = document.querySelector('.scroll'), pad = parseFloat(getComputedStyle(main).paddingLeft) * 2;
  const lines = [...table.querySelectorAll('thead th.carrier, thead th.req > div')].map(el => {
    const r = document.createRange(); r.selectNodeContents(el);  // one line of text is < 2 font sizes high
    return r.getBoundingClientRect().height / (parseFloat(getComputedStyle(el).fontSize) * 1.9);
  });
  return {content: main.clientWidth - pad, table: table.getBoundingClientRect().width, wrapped: lines.filter(x => x > 1).length,
          scrolls: box.scrollWidth > box.clientWidth, page: document.documentElement.scrollWidth - window.innerWidth};
}"""


def test_request_matrix_fills_the_window_headers_on_one_line_and_scrolls_when_wider(page: Any, world: World) -> None:
    page.goto(f"{world.ui}/s/{world.main}/requests")
    try:
        page.set_viewport_size({"width": 2400, "height": 800})  # a wide screen: the matrix uses all of it
        wide = page.evaluate(_LAYOUT)
        assert wide["table"] >= wide["content"] - 2, wide
        assert wide["wrapped"] == 0, wide  # no header cell breaks a carrier name over lines
        page.set_viewport_size({"width": 700, "height": 800})  # narrower than the matrix: it scrolls, the page does not
        narrow = page.evaluate(_LAYOUT)
        assert narrow["wrapped"] == 0 and narrow["scrolls"] and narrow["page"] <= 0, narrow
    finally:
        page.set_viewport_size({"width": 1180, "height": 720})


def test_follow_a_branch_from_the_parent_timeline(page: Any, world: World) -> None:
    page.goto(f"{world.ui}/s/{world.main}")
    fork = page.locator("li.fork:has(a.branch-link)")
    assert fork.count() == 1
    # drawn right after message #3, where the branch left
    assert page.evaluate("document.querySelector('li.fork').previousElementSibling.id") == "m3"
    fork.locator("a.branch-link").click()
    page.wait_for_url(f"**/ui/s/{world.branch}")
    assert page.locator(".branchnote a.parent").inner_text() == world.main
    assert page.evaluate("document.getElementById('fork-own').previousElementSibling.id") == "m3"
    assert page.locator("li.inherited").count() == 4
    own = page.locator("li.msg:not(.inherited)")
    assert own.count() >= 3 and "Another way?" in own.first.inner_text()
    page.click("#requests-link")
    own = page.locator("#matrix thead tr").first.locator("th.req:not(.inherited)")
    assert own.count() == 1 and own.first.get_attribute("data-route") == "deepseek"  # its two requests
    # the parent's requests that carried the inherited turns come first, cut to those turns
    inherited = page.locator("#matrix thead tr").first.locator("th.req.inherited")
    assert inherited.count() == 6 and "parent" in inherited.first.inner_text()
    assert page.locator("#matrix tbody tr").evaluate_all("rows => rows.map(r => r.dataset.seq)") == \
        ["1", "3", "5", "7"]  # #5 and #7 are the branch's own turns (its seq numbers go on from 3)
    assert page.locator("#t3 td[data-req='2'][data-carrier='reasoning_content'] .chip").count() == 0


def test_a_live_request_appears(page: Any, world: World) -> None:
    page.goto(world.ui + "/live")
    sync_api.expect(page.locator("#live-state")).to_have_text("live")
    auth = {"authorization": f"Bearer {TOKEN}"}
    sid = httpx.post(world.url + "/v1/sessions", headers=auth, json={
        "provider": "deepseek", "model": "deepseek-v4", "base_url": world.emulator.url("deepseek")}).json()["id"]
    r = httpx.post(f"{world.url}/v1/sessions/{sid}/messages", headers=auth, json={"content": "live?"}, timeout=60)
    assert r.status_code == 200, r.text
    row = page.locator(f"#live tbody tr:has(a:text-is('{sid}'))")
    sync_api.expect(row).to_have_count(2, timeout=10_000)  # a tool step and the answer
    cells = row.first.locator("td").all_inner_texts()
    assert cells[1] == "request" and cells[3] == "deepseek" and cells[6] == "200"
    assert "reasoning_content" in cells[8] or "RC" in cells[8]
    shoot(page, "ui-live.png")


def test_canary_sweep_no_secret_on_any_served_page(world: World) -> None:
    with httpx.Client(base_url=world.url, timeout=30) as c:
        r = c.post("/ui/login", data={"token": TOKEN, "next": "/ui/"})
        assert r.status_code == 303
        sessions = [s.id for s in Store(world.home / "state.db").list_sessions(100)]
        paths = ["/ui/", "/ui/?q=deep", "/ui/live", "/ui/login", "/ui/s/nope", "/ui/static/ui.js",
                 "/ui/static/ui.css"]
        for sid in sessions:
            paths += [f"/ui/s/{sid}", f"/ui/s/{sid}/requests", f"/ui/live?session={sid}"]
        bodies = [httpx.get(world.ui + "/login").text]  # the login page as a stranger sees it
        for path in paths:
            resp = c.get(path)
            assert resp.status_code in (200, 303, 404), path
            bodies.append(resp.text + str(resp.headers))
        with c.stream("GET", "/ui/live/events") as stream:
            got = b""
            for chunk in stream.iter_bytes():
                got += chunk
                if got.count(b"event: record") >= 10:
                    break
            bodies.append(got.decode())
    timeline = next(b for b in bodies if "Is *** safe to paste?" in b)  # the token a user typed, scrubbed
    assert timeline
    for body in bodies:
        for secret in SECRETS:
            assert secret not in body
    assert re.search(r"sk-[A-Za-z0-9-]{12,}", "".join(bodies)) is None
