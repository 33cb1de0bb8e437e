"""An evaluation started from the Evaluations page in headless Chromium on the embedded
default: the form's size estimate, live progress to 100 % over the run's stream, then
the leaderboard chart, the heatmap (a cell opens its episodes) and the CSV download.
Rule players only (expert and always_accept x 2 line-ups x 3 seeds on bilateral, about
10 s of play); screenshots at 1366 and 390 px (data/screenshots/)."""

from __future__ import annotations

import csv
import io
import json
import re
import time
from collections.abc import Iterator

import pytest

from tests.browser import EmbeddedSite, has_horizontal_scroll, login, screenshot

pytestmark = [pytest.mark.browser, pytest.mark.xdist_group("evaluation_browser")]


@pytest.fixture(scope="module")
def site() -> Iterator[EmbeddedSite]:
    site = EmbeddedSite()
    yield site
    site.stop()


def test_ops_start_an_evaluation_watch_it_and_read_the_result(page, site) -> None:
    frames: list[dict] = []
    page.on(
        "websocket",
        lambda ws: ws.on("framereceived", lambda payload: frames.append(json.loads(payload))),
    )
    login(page, site, "ops")
    page.click("header >> text=Evaluations")
    page.wait_for_url(f"{site.url}/evaluations/")
    for name in ("expert", "always_accept"):
        page.check(f"input[name=policies][value={name}]")
    page.check("input[name=suppliers][value=hardball]")  # 'scenario' is ticked already
    page.check("input[name=scenarios][value=bilateral]")
    page.fill("input[name=seeds]", "3")
    size = page.locator("#estimate-size")
    assert size.text_content() == "12 episodes, 0 of them call a language model"
    assert "estimate" in page.locator("#estimate-note").text_content().lower()
    page.check("input[name=suppliers][value='llm:smollm2']")  # sized, not started
    assert size.text_content() == "18 episodes, 6 of them call a language model"
    page.fill("input[name=prices]", "smollm2=1:2")
    assert "in model tokens" in page.locator("#estimate-time").text_content()
    screenshot(page, "evaluation-form-1366")
    page.uncheck("input[name=suppliers][value='llm:smollm2']")
    page.click("#start")
    page.wait_for_url(re.compile(r"/evaluations/\d+/$"))
    evaluation_id = int(page.url.rstrip("/").rsplit("/", 1)[1])
    # the gauge's width moves in a 0.3 s transition after each live update, which may
    # come after the page has loaded: the shot waits until the bar drawn is the share
    # the text says (or the result page replaced the gauge)
    page.wait_for_function(
        "(() => { const bar = document.getElementById('progress-bar');"
        " if (!bar) return true;"
        " const said = document.getElementById('progress-text').textContent"
        ".match(/[(](\\d+)\\s*%[)]/);"
        " const drawn = bar.getBoundingClientRect().width"
        " / bar.parentElement.getBoundingClientRect().width;"
        " return said !== null && bar.getAnimations().length === 0"
        " && Math.abs(drawn * 100 - Number(said[1])) < 2; })()"
    )
    screenshot(page, "evaluation-running-1366")

    # The page reloads itself once the run is over and draws the result.
    page.wait_for_selector(".matrix-chart .main-svg", timeout=300_000)
    progress = [
        f["evaluation"]
        for f in frames
        if f.get("type") in ("evaluation.progress", "evaluation.snapshot")
    ]
    assert progress, site.log_tail()
    done = [p["done_episodes"] for p in progress]
    assert done == sorted(done) and progress[-1]["episodes"] == 12
    assert progress[-1]["status"] == "finished" and done[-1] == 12  # 100 %
    assert page.locator("#status").text_content() == "finished"
    # each lane's own line, live while it ran and on the finished page: done/total,
    # its play time in seconds, its state
    lane_line = re.compile(r"rule lane \(cpu\): (\d+)/12 episodes, \d+\.\d s of play, (\w+)")
    streamed = [lane_line.fullmatch(p["lanes"][0]["summary"]) for p in progress]
    assert all(streamed) and streamed[-1].groups() == ("12", "finished")
    assert lane_line.fullmatch(page.locator("#lanes li").text_content()).groups() == (
        "12",
        "finished",
    )
    assert page.locator("#cancel-form").count() == 0

    charts = page.locator(".leaderboard-chart")
    assert charts.count() == 1
    names = page.evaluate(
        "[...document.querySelector('.leaderboard-chart').data].map(t => [t.name, t.y])"
    )
    buyers = {buyer for _, ys in names for buyer in ys}
    assert buyers == {"expert", "always_accept"} and names[0][0] == "best"
    tables = page.locator("table.leaderboard tbody tr")
    assert tables.count() == 2
    screenshot(page, "evaluation-result-1366")

    with page.expect_download() as download:
        page.click("#download-csv")
    rows = list(csv.DictReader(io.StringIO(download.value.path().read_text())))
    assert {r["buyer"] for r in rows} == {"expert", "always_accept"}
    assert all(r["episodes"] == "6" and r["scenario"] == "bilateral" for r in rows)

    # A click on the heatmap's top-left cell (first buyer, first line-up) lists its episodes.
    board = page.evaluate(
        "(() => { const d = document.querySelector('.matrix-chart').data[0];"
        " return [d.y[0], d.x[0]]; })()"
    )
    plot = page.locator(".matrix-chart .nsewdrag").first
    plot.scroll_into_view_if_needed()
    box = plot.bounding_box()
    x, y = box["x"] + box["width"] * 0.25, box["y"] + box["height"] * 0.25
    page.mouse.move(x, y)  # plotly picks the clicked point from the hover
    page.wait_for_selector(".matrix-chart .hovertext")
    page.mouse.click(x, y)
    page.wait_for_url(re.compile(rf"/evaluations/{evaluation_id}/cell/\?"))
    assert f"{board[0]} vs {board[1]}" in page.locator("h1").text_content()
    assert page.locator("#cell-episodes tbody tr").count() == 3  # one per seed

    page.set_viewport_size({"width": 390, "height": 844})
    page.goto(f"{site.url}/evaluations/{evaluation_id}/")
    page.wait_for_selector(".matrix-chart .main-svg")
    time.sleep(0.3)  # plotly's responsive relayout
    assert not has_horizontal_scroll(page)
    screenshot(page, "evaluation-result-390")
    page.goto(f"{site.url}/evaluations/")
    assert not has_horizontal_scroll(page)
    screenshot(page, "evaluation-form-390")
