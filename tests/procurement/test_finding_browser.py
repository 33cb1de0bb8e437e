"""Finding work in a real headless Chromium (tests/browser.py): the episode list pages
and filters, a sweep's leaderboard row and box-plot point open its episodes, two
episodes side by side, and one episode's transcript as a CSV and on paper. Screenshots
at 1366 and 390 px land in data/screenshots/."""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Iterator

import pytest

from tests.browser import SETUP, EmbeddedSite, has_horizontal_scroll, login, screenshot

pytestmark = [pytest.mark.browser, pytest.mark.xdist_group("finding_browser")]  # one site

# 60 sweep cells (2 policies x 30 seeds) and two single episodes on one seed: 62 in all,
# more than one page of 50. Run here, in the setup's process, so no test waits on them.
RUNS = """
from procurement.models import PolicyConfig, Scenario
from procurement.services.episode_runner import episode_run
from procurement.services.episodes import episode_create
from procurement.services.sweep_runner import sweep_cells_run, sweep_start
from procurement.services.sweeps import sweep_close_if_done, sweep_create
from django.contrib.auth import get_user_model
scenario = Scenario.objects.get(name="easy_negotiation")
expert, rand = PolicyConfig.objects.get(name="expert"), PolicyConfig.objects.get(name="random")
ops = get_user_model().objects.get(username="ops")
sweep = sweep_create(
    scenarios=[scenario], policies=[expert, rand], seeds=30, user=ops, enqueue=False
)
for chunk in sweep_start(sweep_id=sweep.pk):
    sweep_cells_run(sweep_id=sweep.pk, cell_ids=chunk.cell_ids)
sweep_close_if_done(sweep_id=sweep.pk)
analyst = get_user_model().objects.get(username="analyst")
for policy in (expert, rand):
    e = episode_create(scenario=scenario, policy=policy, seed=5, user=analyst, enqueue=False)
    episode_run(episode_id=e.pk, live_updates=False)
"""


@pytest.fixture(scope="module")
def site() -> Iterator[EmbeddedSite]:
    site = EmbeddedSite(setup=SETUP + RUNS)
    yield site
    site.stop()


def _rows(page) -> int:
    return page.locator("#episode-list tbody tr[data-id]").count()


def test_the_episode_list_pages_and_filters(page, site) -> None:
    login(page, site, "analyst")
    page.click("header >> text=Episodes")
    page.wait_for_url(f"{site.url}/episodes/")
    assert _rows(page) == 50
    assert "62 episodes; page 1 of 2" in page.locator("#found").text_content()
    screenshot(page, "episode-list-1366")
    page.click("text=Older →")
    page.wait_for_url(re.compile(r"page=2"))
    assert _rows(page) == 12

    page.select_option("select[name=status]", "finished")
    page.fill("input[name=policy]", "random")
    page.fill("input[name=owner]", "analyst")
    page.click("#episode-filters button[type=submit]")
    page.wait_for_url(re.compile(r"policy=random"))
    assert _rows(page) == 1  # the single random run; the sweep's were started by ops
    row = page.locator("#episode-list tbody tr").first.text_content()
    assert "random" in row and "analyst" in row and " s" in row  # took, with its unit

    page.goto(f"{site.url}/episodes/?seed=abc")
    assert page.locator("[data-error=seed]").is_visible()
    assert _rows(page) == 0


def test_the_episode_list_fits_a_phone(browser, site) -> None:
    context = browser.new_context(viewport={"width": 390, "height": 844})
    page = context.new_page()
    login(page, site, "analyst")
    page.goto(f"{site.url}/episodes/")
    assert _rows(page) == 50 and not has_horizontal_scroll(page)
    screenshot(page, "episode-list-390")
    context.close()


def test_a_sweeps_leaderboard_row_and_box_plot_point_open_its_episodes(page, site) -> None:
    login(page, site, "ops")
    page.goto(f"{site.url}/sweeps/1/")
    page.wait_for_function(
        "document.querySelectorAll('#leaderboard tbody tr.link-row').length === 2"
    )
    assert "took" in page.locator("#run-times").text_content()
    page.locator("#leaderboard tbody tr.link-row").nth(1).locator("td").nth(3).click()
    page.wait_for_url(re.compile(r"/episodes/\?"))
    assert re.search(r"sweep=1&scenario=easy_negotiation&policy=\w+", page.url)
    assert _rows(page) == 30

    page.goto(f"{site.url}/sweeps/1/")
    page.wait_for_selector("#distribution .main-svg .point")
    screenshot(page, "sweep-links-1366")
    box = page.locator("#distribution .point").first.bounding_box()
    page.mouse.move(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    page.mouse.click(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
    page.wait_for_url(re.compile(r"/episodes/\d+/$"))
    assert page.locator("h1").text_content().startswith("Episode")


def test_two_episodes_side_by_side(browser, site) -> None:
    for width in (1366, 390):
        context = browser.new_context(viewport={"width": width, "height": 900})
        page = context.new_page()
        errors: list[str] = []
        page.on("pageerror", lambda exc, errors=errors: errors.append(str(exc)))
        login(page, site, "analyst")
        page.goto(f"{site.url}/episodes/?seed=5&owner=analyst&policy=expert")
        page.locator("#episode-list tbody tr a").first.click()
        page.wait_for_url(re.compile(r"/episodes/\d+/$"))
        page.wait_for_selector("#timeline tbody tr")
        assert "took" in page.locator("#run-times").text_content()
        assert not has_horizontal_scroll(page)
        screenshot(page, f"episode-links-{width}")
        page.locator(".compare-link").first.click()  # the same seed under another policy
        page.wait_for_url(re.compile(r"/episodes/compare/\?a=\d+&b=\d+"))
        assert "expert" in page.locator("#side-a").text_content()
        assert "random" in page.locator("#side-b").text_content()
        assert page.locator("#compare-metrics tr[data-metric=score]").count() == 1
        assert page.locator("#compare-steps tbody tr").count() > 1
        page.wait_for_selector("#compare-chart .main-svg")
        assert page.locator("#compare-chart .scatterlayer .trace").count() == 2  # one per run
        assert not has_horizontal_scroll(page)
        screenshot(page, f"episode-compare-{width}")
        context.close()
        assert not errors, errors


def test_a_transcript_downloads_as_csv_and_prints(browser, site) -> None:
    context = browser.new_context(viewport={"width": 1366, "height": 900}, accept_downloads=True)
    page = context.new_page()
    login(page, site, "analyst")
    page.goto(f"{site.url}/episodes/?seed=5&owner=analyst&policy=expert")
    page.locator("#episode-list tbody tr a").first.click()
    page.wait_for_url(re.compile(r"/episodes/\d+/$"))
    steps = int(page.locator("#step-count").text_content() or 0) or None
    with page.expect_download() as download:
        page.click("#transcript-csv")
    rows = list(csv.reader(io.StringIO(download.value.path().read_text())))
    header = rows[0]
    assert len(header) == len(set(header))  # every column once
    assert header[:4] == ["step", "week", "actor", "action"] and "price (USD / unit)" in header
    assert steps is None or len(rows) == steps + 1

    page.click("#transcript-print")
    page.wait_for_url(re.compile(r"/print/$"))
    assert page.locator("header").count() == 0  # no navigation on paper
    assert page.locator("#transcript tbody tr").count() == len(rows) - 1
    page.emulate_media(media="print")
    assert page.locator(".screen-only").is_hidden()
    screenshot(page, "episode-print-1366")
    page.emulate_media(media="screen")
    page.set_viewport_size({"width": 390, "height": 844})
    assert not has_horizontal_scroll(page)
    screenshot(page, "episode-print-390")
    context.close()


def test_a_live_episode_says_when_it_finished_and_how_long_it_took(page, site) -> None:
    login(page, site, "analyst")
    page.goto(f"{site.url}/episodes/new/")
    page.select_option("select[name=scenario]", "medium_adversarial")
    page.select_option("select[name=policy]", "expert")
    page.check("input[name=pace][value=live]")  # ~10 s: the page loads while it plays
    page.click("button[type=submit]")
    page.wait_for_url(re.compile(r"/episodes/\d+/$"))
    finished = page.locator("#run-times [data-field=finished]")
    assert finished.get_attribute("datetime") is None  # still playing
    page.wait_for_function("document.getElementById('status').textContent === 'finished'")
    page.wait_for_function(
        "document.querySelector('#run-times [data-field=finished]').hasAttribute('datetime')"
    )
    assert finished.text_content().endswith("UTC")  # the zone is named
    assert re.fullmatch(
        r"\d+(\.\d)? s|\d+ min \d\d s",
        page.locator("#run-times [data-field=duration]").text_content(),
    )


def test_a_running_human_seat_is_found_under_needs_you(page, site) -> None:
    # Before: a seat in play was reachable only by typing its URL.
    login(page, site, "analyst")
    page.goto(f"{site.url}/episodes/new/")
    page.select_option("select[name=scenario]", "easy_negotiation")
    page.select_option("select[name=policy]", "human")
    page.click("button[type=submit]")
    page.wait_for_url(re.compile(r"/episodes/\d+/$"))
    seat = page.url.rstrip("/").rsplit("/", 1)[1]
    page.click("header >> text=Episodes")
    page.click("#needs-you")
    page.wait_for_url(re.compile(r"needs=you"))
    assert [r.get_attribute("data-id") for r in page.locator("#episode-list tbody tr").all()] == [
        seat
    ]
    assert "human seat" in page.locator("#episode-list tbody tr").first.text_content()
    page.locator("#episode-list tbody tr a").first.click()
    page.wait_for_selector("#seat:not([hidden])")
