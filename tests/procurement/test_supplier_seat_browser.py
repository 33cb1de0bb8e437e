"""The supplier seat in a real headless Chromium against a real daphne (tests/browser.py):
an analyst takes the seller's seat against the expert buyer and plays the bilateral
episode to its end, and nothing the page is served (its HTML, the JSON it reads, any
stream) carries the buyer's private figures. Screenshots at 1366 and 390 px land in
data/screenshots/."""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Iterator

import pytest
from playwright.sync_api import Error as PlaywrightError

from tests.browser import EmbeddedSite, has_horizontal_scroll, login, screenshot

pytestmark = [pytest.mark.browser, pytest.mark.xdist_group("supplier_seat_browser")]
PHONE = {"width": 390, "height": 844}


@pytest.fixture(scope="module")
def site() -> Iterator[EmbeddedSite]:
    site = EmbeddedSite()
    yield site
    site.stop()


def _seat(page) -> dict:
    return page.evaluate(
        "fetch(location.pathname.replace('/episodes/', '/api/episodes/').replace("
        "'/supplier-seat/', '/seat/')).then(r => r.json())"
    )


def _ws_close_code(page, path: str) -> int:
    """Open the episode's stream from the page: the close code it gets."""
    return page.evaluate(
        """(path) => new Promise((done) => {
            const ws = new WebSocket(`ws://${location.host}${path}`);
            ws.onclose = (e) => done(e.code);
        })""",
        path,
    )


def test_an_analyst_plays_the_seller_to_the_end_and_never_sees_the_buyer(page, site) -> None:
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    served: list[str] = []  # every body the page was served, and every frame it saw

    def read(response) -> None:
        kind = response.request.resource_type
        redirect = 300 <= response.status < 400  # no body
        if "/episodes/" in response.url and kind in ("document", "fetch", "xhr") and not redirect:
            # a read the page dropped as it navigated away has no body either
            with contextlib.suppress(PlaywrightError):
                served.append(response.text())

    page.on("response", read)
    page.on("websocket", lambda ws: ws.on("framereceived", lambda frame: served.append(str(frame))))
    login(page, site, "analyst")
    page.goto(f"{site.url}/supplier-seat/new/")
    page.select_option("select[name=scenario]", "bilateral")
    page.select_option("select[name=policy]", "expert")
    page.click("button[type=submit]")
    page.wait_for_url(re.compile(r"/episodes/\d+/supplier-seat/$"))
    episode_id = int(re.search(r"/episodes/(\d+)/", page.url).group(1))
    # the buyer's stream and record are closed to the seat holder while it runs
    assert _ws_close_code(page, f"/ws/episodes/{episode_id}/") == 4403
    page.goto(f"{site.url}/episodes/{episode_id}/")  # redirected to the seat
    assert page.url.endswith(f"/episodes/{episode_id}/supplier-seat/")

    answered = 0
    for _ in range(200):
        seat = _seat(page)
        if seat["episode"]["terminal"]:
            break
        turn = seat["turn"]
        if turn is None:  # the buyer is deciding
            page.wait_for_timeout(200)
            continue
        page.wait_for_selector(f"#answer[data-step='{turn['step']}']")
        p = turn["private"]
        assert page.inner_text("#offer-round") == str(turn["round"])
        if answered == 0:
            screenshot(page, "supplier-seat-1366")
            # a counter below the lowest one is refused on its field, nothing played
            page.check("input[name=decision][value=counter]")
            page.fill("#answer-price", f"{p['lowest_counter'] - 1:.2f}")
            page.click("#answer-submit")
            page.wait_for_selector("#answer-price-error:not([hidden])")
            assert "lowest counter" in page.inner_text("#answer-price-error")
            assert _seat(page)["turn"]["step"] == turn["step"]
        target = round(max(p["lowest_counter"], (p["last_counter"] or p["opening"]) * 0.96), 2)
        if turn["offer"] >= p["floor"] and turn["offer"] >= target * 0.92:
            page.check("input[name=decision][value=accept]")
            page.fill("#answer-message", "Deal.")
        else:
            page.check("input[name=decision][value=counter]")
            page.fill("#answer-price", f"{target:.2f}")
            page.fill("#answer-message", f"Our cost is {p['cost']}; {target:.2f} is fair.")
        page.click("#answer-submit")
        answered += 1
        page.wait_for_function(  # the page took the answer (and may show the next offer)
            "(step) => document.getElementById('answer').dataset.step !== String(step)",
            arg=turn["step"],
        )
    page.wait_for_selector("#seat-ended:not([hidden])")
    assert answered >= 2
    rows = page.locator("#seat-thread tbody tr")
    assert rows.count() >= answered
    assert "you" in rows.nth(0).inner_text()
    page.set_viewport_size(PHONE)
    page.reload()
    page.wait_for_selector("#seat-thread tbody tr")
    assert not has_horizontal_scroll(page)
    screenshot(page, "supplier-seat-390")
    page.set_viewport_size({"width": 1366, "height": 900})
    screenshot(page, "supplier-seat-ended-1366")

    # Now the record is open: the buyer's private figures, which the seat never showed.
    page_during = list(served)
    state = page.evaluate(f"fetch('/api/episodes/{episode_id}/state/?step=-1').then(r => r.json())")
    budget = state["budget"]["total"] if isinstance(state.get("budget"), dict) else None
    figures = [budget] if budget else []
    figures += [r["ceiling_unit_price"] for r in state["requirements"] if "ceiling_unit_price" in r]
    assert figures, state.keys()
    text = "\n".join(page_during)
    for x in figures:
        for shown in (f"{x:.2f}", f"{x:,.2f}", json.dumps(x)):
            assert shown not in text, shown
    assert '"budget' not in text and "rationale" not in text
    record = page.evaluate(f"fetch('/api/episodes/{episode_id}/').then(r => r.json())")
    if record["metrics"].get("deal_rate", 0) > 0:  # the award names the seat: on its thread
        assert "awards you" in page.inner_text("#seat-thread")
    assert not errors, errors
