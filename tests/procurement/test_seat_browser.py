"""Taking part, in a real headless Chromium against a real daphne (tests/browser.py): the
human seat's prices, choices and words; its idle takeover; the approval card; and the
header's "waiting for you" indicator. Screenshots at 1366 and 390 px land in
data/screenshots/."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator

import pytest

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
    assert page.input_value("#seat-message") == ""  # words go with the move they were for
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
