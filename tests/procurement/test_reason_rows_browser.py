"""The expert's rows say why, in headless Chromium against the embedded service
(tests/browser.py): every decision of a finished expert episode shows "Why: …" with the
reason the policy gave, as an LLM buyer's rows show its rationale."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest

from tests.browser import EmbeddedSite, login, screenshot

pytestmark = [pytest.mark.browser, pytest.mark.xdist_group("reason_rows_browser")]  # one site


@pytest.fixture(scope="module")
def site() -> Iterator[EmbeddedSite]:
    site = EmbeddedSite()
    yield site
    site.stop()


def test_every_expert_row_shows_why(page, site) -> None:
    login(page, site, "analyst")
    page.goto(f"{site.url}/episodes/new/")
    page.select_option("select[name=scenario]", "bilateral_hardball")
    page.select_option("select[name=policy]", "expert")
    page.check("input[name=pace][value=fast]")
    page.click("button[type=submit]")
    page.wait_for_url(re.compile(r"/episodes/\d+/$"))
    page.wait_for_function(
        "document.getElementById('status').textContent === 'finished'", timeout=120_000
    )
    page.reload()  # the finished episode's rows, from the snapshot
    page.wait_for_selector("#timeline tbody tr")
    rows = page.locator("#timeline tbody tr")
    assert rows.count() >= 3
    whys = [rows.nth(i).text_content() for i in range(rows.count())]
    for i, row in enumerate(whys):
        assert "Why: " in row, (i, row)
    # the first move is the expert's safe opening, with the price it offered
    first = rows.first.locator("div.muted", has_text="Why: ").text_content()
    assert re.match(r"Why: open at \d+\.\d\d: safe opening 0\.\d+ x seller cost \d+\.\d\d", first)
    # the stored decisions carry the same reasons (the API the page reads)
    episode = re.search(r"/episodes/(\d+)/$", page.url).group(1)
    api = page.request.get(f"{site.url}/api/episodes/{episode}/decisions/")
    assert api.ok, api.text()
    body = api.json()
    decisions = body["results"] if isinstance(body, dict) else body
    assert decisions and all(d["rationale"] and d["actor"] == "policy" for d in decisions)
    assert first == "Why: " + decisions[0]["rationale"]
    screenshot(page, "episode-expert-reasons-1366")
    page.set_viewport_size({"width": 390, "height": 844})
    page.reload()
    page.wait_for_selector("#timeline tbody tr")
    screenshot(page, "episode-expert-reasons-390")
