"""Numbers with meaning, in headless Chromium (tests/browser.py): each decision's figures
say what they are and their unit, awarded threads show the price agreed, every final
metric carries its glossary entry, and on a 390 px phone the decisions are cards that
keep their messages while tables that still scroll say so."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator

import pytest

from tests.browser import EmbeddedSite, has_horizontal_scroll, login, screenshot

pytestmark = [pytest.mark.browser, pytest.mark.xdist_group("meaning_browser")]  # one site

RATIONALE = "Their counter is above the reference: hold and ask again."
FIGURE = {  # label, and the unit that ends the figure's text
    "price": ("Price / unit", r"USD / [a-z-]+"),
    "quantity": ("Qty", r"[a-z-]+"),
    "amount": ("Amount", r"USD"),
}


@pytest.fixture(scope="module")
def site() -> Iterator[EmbeddedSite]:
    site = EmbeddedSite()
    yield site
    site.stop()


@pytest.fixture(scope="module")
def finished_episode(site, browser) -> str:
    """A finished expert episode with negotiations, PRs and awards; its page's URL."""
    page = browser.new_page()
    login(page, site, "analyst")
    page.goto(f"{site.url}/episodes/new/")
    page.select_option("select[name=scenario]", "medium_adversarial")
    page.select_option("select[name=policy]", "expert")
    page.fill("input[name=seed]", "0")
    page.check("input[name=pace][value=fast]")
    page.click("button[type=submit]")
    page.wait_for_url(re.compile(r"/episodes/\d+/$"))
    page.wait_for_function("document.getElementById('status').textContent === 'finished'")
    url = page.url
    page.close()
    return url


def with_a_rationale(ws) -> None:
    """The stream as it is, but each snapshot row carries the buyer's rationale (as an LLM
    buyer's or a person's rows do; the expert's have none yet)."""
    server = ws.connect_to_server()

    def to_page(message: str | bytes) -> None:
        event = json.loads(message)
        for d in event.get("decisions", []) if event.get("type") == "episode.snapshot" else []:
            d["rationale"] = RATIONALE
        ws.send(json.dumps(event))

    server.on_message(to_page)


def _open(browser, site, url: str, width: int, stream=None):
    context = browser.new_context(viewport={"width": width, "height": 900})
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    login(page, site, "analyst")
    if stream is not None:
        page.route_web_socket(re.compile(r"/ws/episodes/\d+/$"), stream)
    page.goto(url)
    page.wait_for_selector("#metrics-card:not([hidden])")
    page.wait_for_function(  # every decision in (the snapshot, then earlier pages)
        "document.querySelectorAll('#timeline tbody tr').length > 0"
        " && document.querySelectorAll('#timeline tbody tr').length"
        " == Number(document.getElementById('step-count').textContent)"
        " && document.querySelector('#timeline tbody tr').dataset.step === '0'"
    )
    return context, page, errors


def test_each_decision_says_what_its_numbers_are_with_their_unit(
    browser, site, finished_episode
) -> None:
    # Before: one "Offer" column held a unit price, a quantity or an amount, bare.
    context, page, errors = _open(browser, site, finished_episode, 1366)
    heads = page.locator("#timeline thead th").all_inner_texts()
    assert "Offer" not in heads and "Terms" in heads
    rows = page.locator("#timeline tbody tr").evaluate_all(
        """rows => rows.map(tr => ({
          action: tr.cells[2].textContent,
          response: tr.cells[5].textContent,
          figures: [...tr.querySelectorAll('.figure')].map(f => ({
            field: f.dataset.field,
            label: f.querySelector('.figure-label').textContent,
            text: f.textContent,
          })),
        }))"""
    )
    for row in rows:
        for fig in row["figures"]:
            label, unit = FIGURE[fig["field"]]
            assert fig["label"] == label, fig
            assert re.fullmatch(rf"{re.escape(label)} [\d,.]+ {unit}", fig["text"]), fig
    negotiations = [r for r in rows if r["action"].startswith("negotiate")]
    assert negotiations and all(
        [f["field"] for f in r["figures"]] == ["price"] for r in negotiations
    )
    awards = [r for r in rows if r["action"].startswith("award_contract")]
    assert awards and all("quantity" in [f["field"] for f in r["figures"]] for r in awards)
    # A supplier's counter is a unit price too.
    counters = [r["response"] for r in negotiations if r["response"].startswith("counter at")]
    assert counters and all(re.fullmatch(r"counter at [\d,.]+ USD / [a-z-]+", c) for c in counters)
    # Money elsewhere on the page is in the scenario's currency.
    assert page.locator("#budget-total").text_content().endswith(" USD")
    assert "USD" in page.locator("#threads thead").inner_text()
    screenshot(page, "meaning-episode-1366")
    context.close()
    assert not errors, errors


def test_an_awarded_thread_shows_the_price_it_was_agreed_at(
    browser, site, finished_episode
) -> None:
    # Before: "Agreed" was blank on a thread awarded from the supplier's standing counter.
    context, page, errors = _open(browser, site, finished_episode, 1366)
    page.wait_for_function("document.querySelector('#threads tbody').rows.length > 0")
    threads = page.locator("#threads tbody tr").evaluate_all(
        "rows => rows.map(tr => [...tr.cells].map(td => td.textContent))"
    )
    awarded = [t for t in threads if t[2] == "awarded"]
    assert awarded, threads
    assert all(re.fullmatch(r"[\d,.]+", t[6]) for t in awarded), awarded
    context.close()
    assert not errors, errors


def test_every_final_metric_carries_its_glossary_entry(browser, site, finished_episode) -> None:
    # Before: 40-odd raw names (buyer share, mutual loss, tells...) with no explanation.
    context, page, errors = _open(browser, site, finished_episode, 1366)
    terms = page.locator("#metrics dt abbr.metric").evaluate_all(
        "els => els.map(e => [e.dataset.metric, e.title, e.textContent,"
        " e.querySelector('a').getAttribute('href')])"
    )
    shown = page.locator("#metrics dt").count()
    assert shown >= 40 and len(terms) == shown
    for name, title, label, href in terms:
        assert len(title) > 20 and "_" not in label, (name, title, label)
        assert href == f"/glossary/#metric-{name}"
    titles = {name: title for name, title, _, _ in terms}
    assert "higher is better" in titles["buyer_share"]
    assert "lower is better" in titles["mutual_loss"]
    assert page.locator("#metrics dt", has_text="Spend").count() == 1
    # The glossary page holds an entry, with an anchor, for each of them.
    page.click("#metrics-card .glossary-link")
    page.wait_for_url(f"{site.url}/glossary/")
    for name in titles:
        assert page.locator(f"#metric-{name}").count() == 1, name
    screenshot(page, "meaning-glossary-1366")
    context.close()
    assert not errors, errors


def test_on_a_phone_decisions_are_cards_that_keep_their_messages(
    browser, site, finished_episode
) -> None:
    # Before: the Message column (messages, rationales, tells) was hidden under 600 px.
    context, page, errors = _open(browser, site, finished_episode, 390, with_a_rationale)
    assert not has_horizontal_scroll(page)
    why = page.locator("#timeline tbody tr", has_text=RATIONALE).first.get_by_text(
        f"Why: {RATIONALE}"
    )
    assert why.is_visible() and why.bounding_box()["width"] > 200
    messages = page.locator("#timeline .message")
    assert messages.count() > 0, (errors, page.locator("#timeline tbody").inner_html()[:3000])
    first = messages.first
    assert first.is_visible()
    first.scroll_into_view_if_needed()
    assert first.bounding_box()["width"] > 200
    tells = page.locator("#timeline .tells").first
    assert tells.is_visible()
    card = page.locator("#timeline tbody tr").first
    box = card.bounding_box()
    assert box["width"] <= 390
    labels = card.locator("td[data-label]").evaluate_all(
        "tds => tds.filter(td => td.offsetParent).map(td =>"
        " getComputedStyle(td, '::before').content)"
    )
    assert '"Action: "' in labels and '"Terms: "' in labels, labels
    screenshot(page, "meaning-episode-390")
    context.close()
    assert not errors, errors


def test_a_table_wider_than_a_phone_says_it_scrolls(browser, site, finished_episode) -> None:
    # Before: tables scrolled inside their cards with no hint.
    context, page, errors = _open(browser, site, finished_episode, 390)
    page.wait_for_function("document.querySelector('#threads tbody').rows.length > 0")
    threads = page.locator("#threads").locator("xpath=..")
    hint = threads.locator("xpath=preceding-sibling::p[contains(@class, 'scroll-hint')]")
    page.wait_for_function(
        "document.querySelector('#threads').parentElement.classList.contains('more-right')"
    )
    assert hint.is_visible() and "sideways" in hint.text_content()
    threads.evaluate("el => { el.scrollLeft = el.scrollWidth; }")
    page.wait_for_function(
        "!document.querySelector('#threads').parentElement.classList.contains('more-right')"
    )
    assert "more-left" in threads.get_attribute("class")
    # The timeline is cards: nothing to scroll sideways, no hint.
    timeline_hint = page.locator("#timeline").locator(
        "xpath=../preceding-sibling::p[contains(@class, 'scroll-hint')]"
    )
    assert timeline_hint.is_hidden()
    for path, name in (("/", "overview"), ("/glossary/", "glossary")):
        page.goto(site.url + path)
        assert not has_horizontal_scroll(page), path
        screenshot(page, f"meaning-{name}-390")
    context.close()
    assert not errors, errors


def test_sweep_and_evaluation_pages_explain_their_columns_on_a_desk_and_a_phone(
    browser, site
) -> None:
    site.shell(
        "from django.core.management import call_command\n"
        "call_command('evaluate', '--policies', 'expert,random', '--scenarios',"
        " 'easy_negotiation,bilateral_hardball', '--seeds', '3')"
    )
    context = browser.new_context(viewport={"width": 1366, "height": 900})
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    login(page, site, "ops")
    page.click("text=Start a sweep")
    for scenario in ("easy_negotiation", "bilateral_hardball"):
        page.check(f"input[name=scenarios][value={scenario}]")
    for policy in ("expert", "random"):
        page.check(f"input[name=policies][value={policy}]")
    page.fill("input[name=seeds]", "3")
    page.click("button[type=submit]")
    page.wait_for_url(re.compile(r"/sweeps/\d+/$"))
    sweep = page.url
    page.wait_for_function("document.querySelectorAll('#leaderboard tbody tr').length === 4")
    page.goto(f"{site.url}/evaluations/")
    page.locator("table a").first.click()
    page.wait_for_url(re.compile(r"/evaluations/\d+/$"))
    evaluation = page.url
    for url, name in ((sweep, "sweep"), (evaluation, "evaluation")):
        for width in (1366, 390):
            page.set_viewport_size({"width": width, "height": 900})
            page.goto(url)
            table = page.locator("#leaderboard, table.leaderboard").first
            table.locator("tbody tr").first.wait_for()
            titles = table.locator("thead abbr.metric").evaluate_all(
                "els => Object.fromEntries(els.map(e => [e.dataset.metric, e.title]))"
            )
            assert {"score", "deal_rate", "buyer_share", "mutual_loss"} <= set(titles), titles
            assert all(len(t) > 20 for t in titles.values()), titles
            assert not has_horizontal_scroll(page), (name, width)
            if width == 390:  # a leaderboard is wider than a phone: it says so
                hint = table.locator("xpath=../preceding-sibling::p[@class='scroll-hint']")
                assert hint.is_visible(), name
            screenshot(page, f"meaning-{name}-{width}")
    context.close()
    assert not errors, errors
