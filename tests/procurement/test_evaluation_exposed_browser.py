"""The evaluation result page's "Without exposed worlds" card and the running page's
progress gauge, in headless Chromium on the embedded default.

A person plays the supplier seat on bilateral seeds 11 and 13 (drawn under the server's
key); a sealed evaluation of expert and always_accept on seeds 10-14 then holds them out
and lists them as exposed. The card names the dropped seeds and shows each buyer's mean
score on the three seeds left, recomputed from the stored outcomes. A second evaluation,
never played, is set to half done: its gauge is half full on the first render (no script
runs) and once the live snapshot has drawn it and the width transition has ended.
Screenshots at 1366 and 390 px (data/screenshots/)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator

import pytest

from tests.browser import SETUP, EmbeddedSite, has_horizontal_scroll, login, screenshot

pytestmark = [pytest.mark.browser, pytest.mark.xdist_group("evaluation_exposed_browser")]

EXPOSED = (11, 13)
SEEDS = range(10, 15)
BUILD = f"""
from procurement.models import Evaluation, EvaluationPart, PolicyConfig, Scenario
from procurement.services import evaluations, supplier_seat
from django.contrib.auth import get_user_model
analyst = get_user_model().objects.get(username="analyst")
for seed in {EXPOSED!r}:
    supplier_seat.supplier_seat_start(
        scenario=Scenario.objects.get(name="bilateral"),
        policy=PolicyConfig.objects.get(name="expert"),
        user=analyst,
        seed=seed,
    )
e = evaluations.start_evaluation(
    policies="expert,always_accept", scenarios="bilateral", seeds={len(SEEDS)},
    seed_start={SEEDS[0]}, sealed=True, name="exposed", enqueue=False,
)
evaluations.evaluation_play_lanes(evaluation_id=e.pk)
half = evaluations.start_evaluation(
    policies="expert,always_accept", scenarios="bilateral", seeds=5, name="half",
    enqueue=False,
)
Evaluation.objects.filter(pk=half.pk).update(status="running", done_episodes=5)
EvaluationPart.objects.filter(evaluation=half).update(done_episodes=5)
"""


@pytest.fixture(scope="module")
def site() -> Iterator[EmbeddedSite]:
    site = EmbeddedSite({"WORLD_KEY": "the browser test server's world key"}, setup=SETUP + BUILD)
    yield site
    site.stop()


def _evaluation_id(site: EmbeddedSite, page, name: str) -> int:
    page.goto(f"{site.url}/evaluations/")
    row = page.locator(f"#evaluations tr:has(td[data-label=Name]:text-is('{name}'))")
    href = row.locator("a").first.get_attribute("href")
    return int(re.search(r"/evaluations/(\d+)/", href).group(1))


def _stored_means(page, site: EmbeddedSite, evaluation_id: int) -> dict[str, tuple]:
    """Each buyer's mean score on every seed and on the unexposed ones, from the JSON
    download's outcomes (recomputed here, not read from the card)."""
    data = json.loads(
        page.request.get(f"{site.url}/evaluations/{evaluation_id}/evaluation.json").text()
    )
    fields, rows = data["outcome_fields"], data["outcomes"]
    outcomes = [dict(zip(fields, r, strict=True)) for r in rows]
    out = {}
    for buyer in ("expert", "always_accept"):
        mine = [o for o in outcomes if o["policy"] == buyer]
        kept = [o["score"] for o in mine if o["seed"] not in EXPOSED]
        out[buyer] = (sum(o["score"] for o in mine) / len(mine), sum(kept) / len(kept))
    return out


def _mean(cell: str) -> float:
    """A cell's mean score: its first number ("best 0.852 [0.846, 0.858]")."""
    return float(re.search(r"-?\d+\.\d+", cell).group())


def test_the_card_names_the_dropped_seeds_and_reads_the_board_again(page, site) -> None:
    login(page, site, "analyst")
    evaluation_id = _evaluation_id(site, page, "exposed")
    page.goto(f"{site.url}/evaluations/{evaluation_id}/")
    assert page.locator("#status").text_content() == "finished", site.log_tail()
    card = page.locator("#unexposed")
    dropped = card.locator("#unexposed-dropped").text_content()
    assert re.sub(r"\s+", " ", dropped).startswith(
        "Dropped bilateral seeds 11, 13 (2 of 5 seeds) for every buyer and line-up, because "
        "a person played those worlds in a seat"
    ), dropped
    means = _stored_means(page, site, evaluation_id)
    rows = card.locator("tbody tr")
    assert rows.count() == 2
    for i in range(2):
        cells = [c.strip() for c in rows.nth(i).locator("td").all_text_contents()]
        board, buyer, full, seeds, unseen, change = cells
        assert board == "bilateral" and seeds == "3 of 5"
        full_mean, unseen_mean = means[buyer]
        assert _mean(full) == pytest.approx(full_mean, abs=5e-4)
        assert _mean(unseen) == pytest.approx(unseen_mean, abs=5e-4)
        assert float(change) == pytest.approx(unseen_mean - full_mean, abs=1e-3)
    assert "0 to 1" in card.text_content()  # the score's scale is said on the card
    card.scroll_into_view_if_needed()
    screenshot(page, "evaluation-exposed-1366")

    page.set_viewport_size({"width": 390, "height": 844})
    page.goto(f"{site.url}/evaluations/{evaluation_id}/")
    page.wait_for_selector(".matrix-chart .main-svg")
    page.wait_for_timeout(300)  # plotly's responsive relayout
    assert not has_horizontal_scroll(page)
    # a phone reads each row as a card: every figure beside its label, none cut off
    table = card.locator("table")
    assert table.evaluate("t => t.scrollWidth <= t.clientWidth + 1")
    labels = card.locator("tbody tr").first.evaluate(
        "tr => [...tr.cells].map(td => getComputedStyle(td, '::before').content)"
    )
    assert all(label.startswith('"') and label != '""' for label in labels), labels
    screenshot(page, "evaluation-exposed-390")


def _gauge_settled(page) -> None:
    """Wait until the gauge's width transition has ended (no running animation)."""
    page.wait_for_function("document.getElementById('progress-bar').getAnimations().length === 0")


def _gauge_share(page) -> float:
    return page.evaluate(
        "(() => { const bar = document.getElementById('progress-bar');"
        " return bar.getBoundingClientRect().width"
        " / bar.parentElement.getBoundingClientRect().width; })()"
    )


def test_a_half_done_run_shows_a_half_full_gauge(browser, page, site) -> None:
    login(page, site, "analyst")
    evaluation_id = _evaluation_id(site, page, "half")
    url = f"{site.url}/evaluations/{evaluation_id}/"
    # first render, no script at all: the server's inline width alone
    static = browser.new_context(java_script_enabled=False, viewport={"width": 1366, "height": 900})
    static.add_cookies(page.context.cookies())
    plain = static.new_page()
    plain.goto(url)
    assert _gauge_share(plain) == pytest.approx(0.5, abs=0.01)
    static.close()
    # with the live snapshot drawn and the transition over
    page.goto(url)
    page.wait_for_function(
        "document.getElementById('progress-text').textContent.includes('(50 %)')"
    )
    _gauge_settled(page)
    assert _gauge_share(page) == pytest.approx(0.5, abs=0.01)
    screenshot(page, "evaluation-half-1366")
    page.set_viewport_size({"width": 390, "height": 844})
    page.goto(url)
    page.wait_for_function(
        "document.getElementById('progress-text').textContent.includes('(50 %)')"
    )
    _gauge_settled(page)
    assert _gauge_share(page) == pytest.approx(0.5, abs=0.01)
    assert not has_horizontal_scroll(page)
    screenshot(page, "evaluation-half-390")
