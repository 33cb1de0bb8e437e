"""The dashboard in a real headless Chromium against a real daphne (tests/browser.py):
log in, start a live episode from the form and watch its decisions arrive one by one,
scrub the finished episode, and check a 390 px phone. Screenshots land in
data/screenshots/ as artifacts."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator

import pytest

from tests.browser import (
    EmbeddedSite,
    has_horizontal_scroll,
    login,
    screenshot,
)

pytestmark = [pytest.mark.browser, pytest.mark.xdist_group("pages_browser")]  # one site


@pytest.fixture(scope="module")
def site() -> Iterator[EmbeddedSite]:
    site = EmbeddedSite()
    yield site
    site.stop()


def _rows(page) -> int:
    return page.locator("#timeline tbody tr").count()


def start_from_form(
    page, site, scenario: str, policy: str = "expert", pace: str = "fast", seed: str = ""
) -> str:
    """Fill the start form, submit it, and land on the episode's page; returns its URL."""
    page.goto(f"{site.url}/episodes/new/")
    page.select_option("select[name=scenario]", scenario)
    page.select_option("select[name=policy]", policy)
    assert page.locator("select[name=policy] + .about").text_content()  # what it plays
    if seed:
        page.fill("input[name=seed]", seed)
    page.check(f"input[name=pace][value={pace}]")
    page.click("button[type=submit]")
    page.wait_for_url(re.compile(r"/episodes/\d+/$"))
    return page.url


def test_an_analyst_starts_a_live_episode_and_watches_each_decision_arrive(page, site) -> None:
    login(page, site, "analyst")
    page.click("text=Start an episode")
    page.wait_for_url(f"{site.url}/episodes/new/")
    # 26 decisions at the live pace (~10 s): time to watch several arrive even when the
    # page itself is slow to load (a 9-decision episode was mostly over by then).
    start_from_form(page, site, "medium_adversarial", pace="live", seed="0")
    assert page.locator("#live-status").text_content() is not None

    # Live: rows come one at a time over the socket, without a reload.
    seen: list[int] = []
    deadline = time.monotonic() + 120
    while page.locator("#status").text_content() != "finished":
        assert time.monotonic() < deadline, (seen, site.log_tail())
        count = _rows(page)
        if not seen or count != seen[-1]:
            seen.append(count)
        time.sleep(0.05)
    total = _rows(page)
    increasing = [n for n in seen if 0 < n < total]
    assert len(increasing) >= 3, seen  # several partial states: not one final dump
    assert total == int(page.locator("#step-count").text_content())
    page.wait_for_selector("#metrics-card:not([hidden])")
    assert page.locator("#cancel").is_hidden()  # nothing left to cancel
    page.wait_for_selector("#chart .main-svg")
    assert page.locator("#requirements tbody tr").count() >= 1
    screenshot(page, "episode-live-1366")

    # Replay: drag to an early step; the boards show that step, the row is marked.
    page.locator("#scrubber").evaluate(
        "(el) => { el.value = -1; el.dispatchEvent(new Event('input')); }"
    )
    page.wait_for_function("document.querySelector('#threads tbody').rows.length === 0")
    assert page.locator("#scrubber-label").text_content() == "before the first decision"
    page.locator("#scrubber").evaluate(
        f"(el) => {{ el.value = {total - 1}; el.dispatchEvent(new Event('input')); }}"
    )
    page.wait_for_function("document.querySelector('#threads tbody').rows.length > 0")
    assert page.locator("#timeline tr.current").get_attribute("data-step") == str(total - 1)
    screenshot(page, "episode-replay-1366")

    # The overview links to it and shows it finished.
    page.click("text=Overview")
    row = page.locator("#episodes tbody tr").first
    assert "finished" in row.text_content()
    screenshot(page, "overview-1366")


def test_pages_fit_a_390_px_phone(browser, site) -> None:
    context = browser.new_context(viewport={"width": 390, "height": 844})
    page = context.new_page()
    login(page, site, "analyst")
    pages = (("/", "overview"), ("/episodes/new/", "episode-new"), ("/scenarios/1/", "scenario"))
    for path, name in pages:
        page.goto(site.url + path)
        assert not has_horizontal_scroll(page), path
        screenshot(page, f"{name}-390")
    start_from_form(page, site, "easy_negotiation")
    page.wait_for_selector("#timeline tbody tr")
    page.wait_for_selector("#chart .main-svg")
    page.wait_for_selector("#requirements tbody tr")
    assert not has_horizontal_scroll(page)
    screenshot(page, "episode-390")
    context.close()


def test_a_scenario_page_reads_as_plain_values_on_a_desk_and_a_phone(browser, site) -> None:
    # Before: {'cooperative': 0.4, ...}, None and every bilateral_ parameter on an arena
    # scenario.
    context = browser.new_context(viewport={"width": 1366, "height": 900})
    page = context.new_page()
    login(page, site, "analyst")
    page.goto(f"{site.url}/scenarios/")
    page.click("text=medium_adversarial")
    table = page.locator("#parameters").inner_text()
    assert "bilateral_" not in table and "n_suppliers" in table
    assert not any(bad in table for bad in ("{'", "None", "e+", "True"))
    assert re.search(r"cooperative \d+ %", table)
    screenshot(page, "scenario-1366")
    page.set_viewport_size({"width": 390, "height": 844})
    assert not has_horizontal_scroll(page)
    screenshot(page, "scenario-arena-390")
    context.close()


def test_a_user_without_a_role_sees_that_and_nothing_else(page, site) -> None:
    page.goto(f"{site.url}/accounts/login/")
    page.fill("input[name=username]", "norole")
    page.fill("input[name=password]", "browser-test-password-1234")
    page.click("button[type=submit]")
    page.wait_for_load_state()
    assert "no role yet" in page.content()
    assert page.locator("#episodes").count() == 0
    screenshot(page, "no-role-1366")


def test_ops_start_a_sweep_and_watch_it_finish_with_a_leaderboard_and_a_chart(
    browser, site
) -> None:
    context = browser.new_context(viewport={"width": 1366, "height": 900}, accept_downloads=True)
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    login(page, site, "ops")
    page.click("text=Start a sweep")
    for scenario in ("easy_negotiation", "bilateral_hardball"):
        page.check(f"input[name=scenarios][value={scenario}]")
    for policy in ("expert", "random"):
        page.check(f"input[name=policies][value={policy}]")
    page.fill("input[name=seeds]", "15")
    assert page.locator("#estimate").text_content().startswith("60 cells")
    page.click("button[type=submit]")
    page.wait_for_url(re.compile(r"/sweeps/\d+/$"))
    page.wait_for_function("document.getElementById('status').textContent === 'finished'")
    page.wait_for_function("document.getElementById('progress-text').textContent.includes('100 %')")
    page.wait_for_function("document.querySelectorAll('#leaderboard tbody tr').length === 4")
    page.wait_for_selector("#distribution .main-svg")
    screenshot(page, "sweep-1366")
    with page.expect_download() as download:
        page.click("#download-csv")
    lines = download.value.path().read_text().splitlines()
    assert lines[0].startswith("scenario,policy,seed,status,score") and len(lines) == 61
    header = lines[0].split(",")
    assert len(header) == len(set(header))  # before: score twice
    context.close()
    assert not errors, errors


def test_an_analyst_cancels_their_live_episode_from_its_page(page, site) -> None:
    login(page, site, "analyst")
    start_from_form(page, site, "hard_arena", pace="live")
    page.wait_for_selector("#timeline tbody tr")
    posts = []
    page.on("request", lambda r: posts.append(r.url) if r.url.endswith("/cancel/") else None)
    asked = []
    page.once("dialog", lambda dialog: (asked.append(dialog.message), dialog.dismiss()))
    page.click("#cancel")  # changes their mind: nothing is sent
    page.once("dialog", lambda dialog: dialog.accept())
    page.click("#cancel")
    page.wait_for_function("document.getElementById('status').textContent === 'cancelled'")
    assert page.locator("#cancel").is_hidden()
    assert asked[0].startswith("Cancel this episode?") and len(posts) == 1
    stopped_at = _rows(page)
    time.sleep(1.5)  # a cancelled episode stores nothing more
    assert _rows(page) == stopped_at


def test_an_analyst_takes_the_buyers_seat(page, site) -> None:
    login(page, site, "analyst")
    start_from_form(page, site, "bilateral_hardball", "human")
    page.wait_for_selector("#seat-supplier_id option[value=S01]", state="attached")
    page.select_option("#seat-action", "negotiate")

    def offer(price: str) -> None:
        page.fill("#seat-price", price)
        page.click("#seat-submit")

    # The seat's world is sealed and its seed the server's: offer against S01's asking
    # price as the replay boards' state gives it.
    ask = page.evaluate(
        "fetch(location.pathname.replace('/episodes/', '/api/episodes/') + 'state/?step=-1')"
        ".then(r => r.json()).then(s => s.suppliers[0].list_prices.R01)"
    )
    offer(f"{ask * 0.8:.2f}")
    page.wait_for_function("document.querySelectorAll('#timeline tbody tr').length === 1")
    page.wait_for_selector("#threads tbody tr")  # the boards (and the form) moved on
    offer("-5")  # refused by the engine: shown on the field, nothing stored
    error = page.locator('.field-error[data-field="price"]')
    error.wait_for()
    page.wait_for_function(
        "document.querySelector('.field-error[data-field=\"price\"]').textContent !== ''"
    )
    assert "out_of_range" in error.text_content()
    assert _rows(page) == 1
    offer(f"{ask * 0.82:.2f}")
    page.wait_for_function("document.querySelectorAll('#timeline tbody tr').length === 2")
    assert error.text_content() == ""
    assert "counter" in page.locator("#timeline tbody tr").nth(1).text_content()
    screenshot(page, "human-seat-1366")

    # Play is disabled while a move is in flight (held here until checked).
    held = []
    page.route("**/act/", lambda route: held.append(route))
    offer(f"{ask * 0.83:.2f}")
    page.wait_for_function("document.getElementById('seat-submit').disabled")
    while not held:
        page.wait_for_timeout(20)
    held[0].continue_()
    page.wait_for_function("!document.getElementById('seat-submit').disabled")
    page.unroute("**/act/")
    page.wait_for_function("document.querySelectorAll('#timeline tbody tr').length === 3")

    # The same move six times at once on the embedded SQLite: played once.
    codes = page.evaluate(
        """async (price) => {
          const id = JSON.parse(document.getElementById("episode-page").textContent).episode.id;
          const action = {action_type: "negotiate", supplier_id: "S01", requirement_id: "R01",
                          price};
          const post = () => window.arenaPost(`/api/episodes/${id}/act/`, {step: 3, action});
          const answers = await Promise.all([1, 2, 3, 4, 5, 6].map(post));
          return answers.map(([ok, body]) => ok ? 201 : body.next_step ?? body);
        }""",
        round(ask * 0.84, 2),
    )
    assert sorted(codes) == [4, 4, 4, 4, 4, 201], codes  # five refused: next_step is 4
    page.wait_for_function("document.querySelectorAll('#timeline tbody tr').length === 4")


def test_an_escalation_waits_for_someone_other_than_its_starter(page, site) -> None:
    login(page, site, "analyst")
    episode_url = start_from_form(page, site, "approvals_demo", seed="1")
    page.wait_for_selector("#approval:not([hidden])")
    assert "escalate" in page.locator("#approval-text").text_content()
    # The starter is offered no buttons, and told why.
    page.wait_for_selector("#approval-why:not([hidden])")
    assert "You started this run" in page.locator("#approval-why").text_content()
    assert page.locator("#approval-actions").is_hidden()
    screenshot(page, "approval-1366")
    page.context.clear_cookies()
    login(page, site, "ops")
    page.wait_for_selector("#approvals-card:not([hidden]) li")  # the overview lists it
    page.goto(episode_url)
    page.wait_for_selector("#approval-actions:not([hidden])")
    assert page.locator("#approval-why").is_hidden()
    page.click("#approve")
    page.wait_for_selector("#approval", state="hidden")
    page.wait_for_function("document.getElementById('status').textContent === 'finished'")
    escalation = page.locator("#timeline tbody tr", has_text="escalate").first
    assert "approved by ops" in escalation.text_content()
    assert "Approved by ops (ops)." in page.locator("#approval-log").text_content()


LONG_EPISODE = """
import os
from pathlib import Path
from negotiation import load_scenario
from procurement.models import PolicyConfig
from procurement.services.episode_runner import episode_run
from procurement.services.episodes import episode_create
from procurement.services.scenarios import scenario_create
config = {**load_scenario("easy_negotiation").model_dump(), "weeks": 104,
          "actions_per_week": 12, "max_steps": 2000}
scenario = scenario_create(name="long_random", config=config)
policy = PolicyConfig.objects.get(name="random")
episode = episode_create(scenario=scenario, policy=policy, seed=1, enqueue=False)
episode_run(episode_id=episode.pk, live_updates=False)
Path(os.environ["DATA_DIR"], "long_episode").write_text(str(episode.pk))
"""


def test_a_long_episode_fills_in_page_by_page_after_a_reconnect(page, site) -> None:
    # The stream answers a resume 200 decisions at a time: the page asks for each page.
    site.shell(LONG_EPISODE)  # 543 decisions
    episode_id = (site.data_dir / "long_episode").read_text()
    login(page, site, "analyst")
    first = page.request.get(f"{site.url}/api/episodes/{episode_id}/decisions/?page_size=10")
    connections = []

    def stream(ws) -> None:
        server = ws.connect_to_server()
        connections.append(ws)
        if len(connections) > 1:
            return  # the reconnect: everything passes

        def snapshot(message: str) -> None:  # the first: as if only 10 had been stored
            sent = {**json.loads(message), "decisions": first.json()["results"]}
            ws.send(json.dumps(sent))
            ws.close()  # the page reconnects and resumes after step 9
            server.close()

        server.on_message(snapshot)

    page.route_web_socket(re.compile(r"/ws/episodes/"), stream)
    page.goto(f"{site.url}/episodes/{episode_id}/")
    page.wait_for_function("document.querySelectorAll('#timeline tbody tr').length === 543")
    # The page may fill the hole from the API before its socket reconnects (both paths
    # are the page's own): wait for the reconnect, whose resume must add no row twice.
    for _ in range(300):
        if len(connections) == 2:
            break
        page.wait_for_timeout(100)
    page.wait_for_timeout(500)  # the resume's pages, if any, have landed
    steps = page.locator("#timeline tbody tr").evaluate_all(
        "rows => rows.map(r => +r.dataset.step)"
    )
    assert steps == list(range(543)) and len(connections) == 2
