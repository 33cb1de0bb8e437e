"""Taking part, in a real headless Chromium against a real daphne (tests/browser.py): the
human seat's prices, choices and words; its idle takeover; the approval card; the header's
"waiting for you" indicator; and the supplier seat, played to its end against the expert
without a glimpse of the buyer's side. Screenshots at 1366 and 390 px land in
data/screenshots/."""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Iterator

import pytest
from playwright.sync_api import Error as PlaywrightError

from tests.browser import SETUP, EmbeddedSite, has_horizontal_scroll, login, screenshot

pytestmark = [pytest.mark.browser, pytest.mark.xdist_group("seat_browser")]  # one site

# A seat that passes to the expert after 10 idle seconds, and a reconciler that looks
# every second, so a takeover happens within the test.
QUICK_SEAT = """
from procurement.services.policies import policy_create
policy_create(name="human_quick", policy="human", params={"idle_seconds": 10})
"""
RECONCILER = {"RECONCILE_ON_START": "1", "RECONCILE_INTERVAL_SECONDS": "1"}
PHONE = {"width": 390, "height": 844}


@pytest.fixture(scope="module")
def site() -> Iterator[EmbeddedSite]:
    site = EmbeddedSite(RECONCILER, setup=SETUP + QUICK_SEAT)
    yield site
    site.stop()


def start(page, site, scenario: str, policy: str, seed: str = "") -> str:
    page.goto(f"{site.url}/episodes/new/")
    page.select_option("select[name=scenario]", scenario)
    page.select_option("select[name=policy]", policy)
    if seed:
        page.fill("input[name=seed]", seed)
    page.check("input[name=pace][value=fast]")
    page.click("button[type=submit]")
    page.wait_for_url(re.compile(r"/episodes/\d+/$"))
    return page.url


def script_errors(page) -> list[str]:
    """The page's uncaught script errors, as they happen (assert it stays empty)."""
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    return errors


def state(page, step: int = -1) -> dict:
    return page.evaluate(
        "(step) => fetch(location.pathname.replace('/episodes/', '/api/episodes/') + "
        "`state/?step=${step}`).then(r => r.json())",
        step,
    )


def options(page, selector: str) -> list[str]:
    return page.eval_on_selector_all(f"{selector} option", "els => els.map(e => e.value)")


def rows(page) -> int:
    return page.locator("#timeline tbody tr").count()


def test_the_seat_shows_prices_and_only_the_suppliers_the_requirement_can_use(page, site) -> None:
    errors = script_errors(page)
    login(page, site, "analyst")
    start(page, site, "medium_adversarial", "human")
    page.wait_for_selector("#seat-facts dt", state="attached")
    page.select_option("#seat-action", "negotiate")
    world = state(page)
    # A requirement that only some suppliers serve.
    for req in world["requirements"]:
        serving = [s["id"] for s in world["suppliers"] if req["category"] in s["categories"]]
        if 0 < len(serving) < len(world["suppliers"]):
            break
    page.select_option("#seat-requirement_id", req["id"])
    offered = options(page, "#seat-supplier_id")
    assert offered and set(offered) <= set(serving), (offered, serving)
    sup = next(s for s in world["suppliers"] if s["id"] == offered[0])
    facts = page.locator("#seat-facts").text_content()
    money = lambda x: f"{x:,.2f}".rstrip("0").rstrip(".")  # noqa: E731 as toLocaleString
    for expected in (
        req["unit"],
        money(req["reference_unit_price"]),
        money(req["ceiling_unit_price"]),
        money(sup["list_prices"][req["id"]]),
        str(sup["capacity"][req["category"]]),
    ):
        assert expected in facts, (expected, facts)
    left = page.locator("#seat-left").text_content()
    assert f"actions left this week: {world['actions_left_this_week']} of " in left
    assert str(world["actions_per_week"]) in left
    screenshot(page, "seat-prices-1366")

    # What is typed for one action does not carry into another.
    page.fill("#seat-price", "123")
    page.fill("#seat-rationale", "for the offer")
    page.select_option("#seat-action", "award_contract")  # has an optional price too
    assert page.input_value("#seat-price") == "" and page.input_value("#seat-rationale") == ""
    page.select_option("#seat-action", "raise_pr")  # the most a PR may ask, from the mask
    assert page.get_attribute("#seat-amount", "placeholder").startswith("up to ")
    page.select_option("#seat-action", "negotiate")
    assert page.input_value("#seat-price") == ""

    # A field's error and what was typed survive a new state (the boards refresh it).
    page.select_option("#seat-requirement_id", req["id"])
    page.select_option("#seat-supplier_id", sup["id"])
    page.fill("#seat-price", "-5")
    page.fill("#seat-message", "Can you do better?")
    page.click("#seat-submit")
    error = page.locator('.field-error[data-field="price"]')
    page.wait_for_function(
        "document.querySelector('.field-error[data-field=\"price\"]').textContent !== ''"
    )
    page.evaluate(
        "(s) => document.dispatchEvent(new CustomEvent('arena:state', {detail: s}))", world
    )
    assert "out_of_range" in error.text_content()
    assert page.input_value("#seat-message") == "Can you do better?"
    assert page.input_value("#seat-supplier_id") == sup["id"]

    # The person's own words and reasons show on the timeline after the move.
    price = round(sup["list_prices"][req["id"]] * 0.8, 2)
    page.fill("#seat-price", str(price))
    page.fill("#seat-rationale", "Anchor low against the list price.")
    page.click("#seat-submit")
    page.wait_for_function("document.querySelectorAll('#timeline tbody tr').length === 1")
    row = page.locator("#timeline tbody tr").first.text_content()
    assert "Buyer: Can you do better?" in row
    assert "Why: Anchor low against the list price." in row
    # Words go with the move they were for. The row can arrive over the socket before the
    # move's own HTTP answer, which is what clears the form, so wait for that.
    page.wait_for_function("document.querySelector('#seat-message').value === ''")
    page.wait_for_function(
        "document.getElementById('seat-left').textContent.includes("
        f"'actions left this week: {world['actions_left_this_week'] - 1} of')"
    )
    screenshot(page, "seat-after-move-1366")
    page.set_viewport_size(PHONE)
    page.reload()  # the chart sizes itself on load
    page.wait_for_selector("#seat-facts dt", state="attached")
    page.select_option("#seat-requirement_id", req["id"])
    assert not has_horizontal_scroll(page)
    screenshot(page, "seat-390")
    assert not errors, errors


def test_an_idle_seat_says_who_took_over_and_when(page, site) -> None:
    errors = script_errors(page)
    login(page, site, "analyst")
    start(page, site, "easy_negotiation", "human_quick")
    page.wait_for_selector("#seat:not([hidden])")
    assert page.locator("#seat-handover").is_hidden()
    page.wait_for_selector("#seat-handover:not([hidden])", timeout=40_000)
    notice = page.locator("#seat-handover").text_content()
    assert "idle for 10 s" in notice and "expert policy took it over" in notice, notice
    assert re.search(r"\d{1,2}:\d{2}:\d{2}", notice), notice  # when, in the viewer's zone
    assert page.locator("#seat").is_hidden()
    page.wait_for_function("document.getElementById('status').textContent === 'finished'")
    page.reload()  # a later visit says the same
    page.wait_for_selector("#seat-handover:not([hidden])")
    assert "expert policy took it over" in page.locator("#seat-handover").text_content()
    screenshot(page, "seat-handover-1366")
    assert not errors, errors


def test_the_approval_card_says_what_is_at_stake_and_who_may_answer(browser, site) -> None:
    starter = browser.new_page(viewport={"width": 1366, "height": 900})
    login(starter, site, "analyst")
    url = start(starter, site, "approvals_demo", "expert", seed="1")
    starter.wait_for_selector("#approval:not([hidden])")
    assert "You started this run" in starter.locator("#approval-why").text_content()

    # Another analyst: below the scenario's approver role, told so instead of buttons.
    site.shell(
        "from procurement.services.accounts import user_create\n"
        "user_create(username='analyst2', role='analyst', password='browser-test-password-1234')"
    )
    other = browser.new_page(viewport={"width": 1366, "height": 900})
    errors = script_errors(other)
    login(other, site, "analyst2")
    other.goto(url)
    other.wait_for_selector("#approval:not([hidden])")
    assert other.locator("#approval-actions").is_hidden()
    why = other.locator("#approval-why").text_content()
    assert "No buttons for you" in why and "answered by ops or admins" in why, why

    subject = other.locator("#approval-subject").text_content()
    assert re.search(r"\d", subject) and ("PR" in subject or "counter" in subject), subject
    assert other.locator("#approval-rationale").text_content()
    assert "nothing is spent" in other.locator("#approval-if-refused").text_content()
    assert other.locator("#approval-if-approved").text_content()
    deadline = other.locator("#approval-deadline").text_content()
    assert re.search(r"(UTC|GMT|[A-Z]{3,4})", deadline), deadline  # names a time zone
    first = other.locator("#approval-countdown").text_content()
    assert re.fullmatch(r"\d+ min \d\d s left", first), first
    other.wait_for_function(
        f"document.getElementById('approval-countdown').textContent !== {json.dumps(first)}"
    )
    screenshot(other, "approval-card-1366")
    other.set_viewport_size(PHONE)
    other.reload()  # the chart sizes itself on load
    other.wait_for_selector("#approval:not([hidden])")
    assert not has_horizontal_scroll(other)
    screenshot(other, "approval-card-390")

    # Ops may answer: the header says so and links to the card.
    ops = browser.new_page(viewport={"width": 1366, "height": 900})
    login(ops, site, "ops")
    ops.wait_for_selector("#notify-count:not([hidden])")
    ops.click("#notify-button")
    link = ops.locator("#notify-list li.approval a").first
    assert url.removeprefix(site.url) in link.get_attribute("href")
    screenshot(ops, "notifications-approval-1366")
    link.click()
    ops.wait_for_selector("#approval-actions:not([hidden])")
    ops.click("#approve")
    ops.wait_for_selector("#approval", state="hidden")
    # The analysts' headers never listed it: they may not answer.
    assert other.locator("#notify-count").is_hidden()
    for p in (starter, other, ops):
        p.close()
    assert not errors, errors


def test_the_header_tells_ops_their_sweep_finished_and_links_to_it(page, site) -> None:
    errors = script_errors(page)
    login(page, site, "ops")
    # Started through the API, so its page was never shown: the header must tell.
    sweep = page.evaluate(
        """async () => {
          const token = document.cookie.match(/csrftoken=([^;]+)/)[1];
          const response = await fetch("/api/sweeps/", {method: "POST",
            headers: {"Content-Type": "application/json", "X-CSRFToken": token},
            body: JSON.stringify({scenarios: ["bilateral"], policies: ["always_accept"],
                                  seeds: 2})});
          return (await response.json()).id;
        }"""
    )
    page.wait_for_selector("#notify-list li.sweep", state="attached", timeout=30_000)
    assert page.locator("#notify-count").text_content() != "0"
    page.click("#notify-button")
    link = page.locator("#notify-list li.sweep a").first
    assert f"Sweep {sweep} finished" in link.text_content()
    page.set_viewport_size(PHONE)
    assert not has_horizontal_scroll(page)
    screenshot(page, "notifications-sweep-390")
    page.set_viewport_size({"width": 1366, "height": 900})
    link.click()
    page.wait_for_url(f"{site.url}/sweeps/{sweep}/")
    # Looked at: no longer new, here or on the next page.
    page.wait_for_selector("#notify-count[hidden]", state="attached", timeout=20_000)
    page.goto(f"{site.url}/")
    page.wait_for_selector("#notify-list li", state="attached")
    page.wait_for_timeout(500)
    assert page.locator("#notify-count").is_hidden()
    assert page.locator("#notify-list li.sweep").count() == 0
    assert not errors, errors


# --- the supplier seat: the analyst plays the seller (services.supplier_seat) -------------


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
    page.set_default_timeout(60_000)  # a loaded machine's daphne answers slowly
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
            page.set_viewport_size(PHONE)
            assert not has_horizontal_scroll(page)
            screenshot(page, "supplier-seat-offer-390")
            page.set_viewport_size({"width": 1366, "height": 900})
            # A price the API refuses (zero: its serializer) and one the seat's rules refuse
            # (a cent below the lowest counter) are each said on the price field; nothing
            # is played. (Some worlds' lowest counter is under 1 per unit.)
            page.check("input[name=decision][value=counter]")
            for price, why in (
                ("0", "greater than or equal to 0.01"),
                (f"{p['lowest_counter'] - 0.01:.2f}", "lowest counter"),
            ):
                page.fill("#answer-price", price)
                page.click("#answer-submit")
                page.wait_for_function(  # said on the price field, or anywhere on the form
                    "why => !document.getElementById('answer-error').hidden || document"
                    ".getElementById('answer-price-error').textContent.includes(why)",
                    arg=why,
                )
                assert why in page.inner_text("#answer-price-error"), page.inner_text("#answer")
                assert page.locator("#answer-error").is_hidden()
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
    assert page.locator("#seat-offer").is_hidden() and page.locator("#seat-rule").is_hidden()
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
        # As the page writes money, and as the server's JSON writes a float (154.0, never a
        # bare 154: the browser hands a whole number back as an int, which would match any
        # quantity, id or 154.37 in the text).
        for shown in (f"{x:.2f}", f"{x:,.2f}", json.dumps(float(x))):
            # the figure itself, not a longer number that starts with it (15.4 in 15.46)
            assert not re.search(rf"(?<![\d.,]){re.escape(shown)}(?![\d])", text), shown
    assert '"budget' not in text and "rationale" not in text
    record = page.evaluate(f"fetch('/api/episodes/{episode_id}/').then(r => r.json())")
    if record["metrics"].get("deal_rate", 0) > 0:  # the award names the seat: on its thread
        assert "awards you" in page.inner_text("#seat-thread")
    assert not errors, errors
