"""Finding work: the episode list (filters shared with the API, pages of 50), comparing
two episodes, and one episode's transcript as a CSV and a printable page."""

from __future__ import annotations

import csv
import datetime as dt
import io

import pytest
from django.utils import timezone

from procurement.models import ApprovalRequest, Episode
from procurement.selectors.episode_compare import (
    aligned_steps,
    compare_candidates,
    metric_rows,
    score_lines,
)
from procurement.selectors.episode_filters import EpisodeFilter
from procurement.services.episode_runner import episode_run
from procurement.services.episodes import episode_create
from procurement.services.exports import transcript_columns, write_transcript_csv
from procurement.services.sweeps import sweep_create
from procurement.templatetags.arena_format import duration

pytestmark = pytest.mark.django_db


def _login(client, user_with_role, role="analyst"):
    user = user_with_role(role)
    client.force_login(user)
    client.user = user
    return client


def _finished(preset, policy, seed=3, user=None) -> Episode:
    episode = episode_create(scenario=preset, policy=policy, seed=seed, user=user, enqueue=False)
    return episode_run(episode_id=episode.pk, live_updates=False)


def _many(preset, expert, n, user=None) -> list[Episode]:
    return [
        episode_create(scenario=preset, policy=expert, seed=i, user=user, enqueue=False)
        for i in range(n)
    ]


def _ids(response) -> list[int]:
    return [e.pk for e in response.context["page"].object_list]


# --- the filter (one FilterSet: the page and the API) --------------------------------


def test_the_filter_finds_by_owner_date_and_search(user_with_role, preset, expert) -> None:
    alice, bob = user_with_role("analyst", "alice"), user_with_role("analyst", "bob")
    mine = episode_create(scenario=preset, policy=expert, seed=7, user=alice, enqueue=False)
    theirs = episode_create(scenario=preset, policy=expert, seed=8, user=bob, enqueue=False)
    Episode.objects.filter(pk=theirs.pk).update(created_at=timezone.now() - dt.timedelta(days=3))

    def found(**params) -> set[int]:
        f = EpisodeFilter(params, queryset=Episode.objects.all())
        assert f.is_valid(), f.errors
        return set(f.qs.values_list("pk", flat=True))

    assert found(owner="alice") == {mine.pk}
    sweep = sweep_create(scenarios=[preset], policies=[expert], seeds=1, user=bob, enqueue=False)
    cell = episode_create(scenario=preset, policy=expert, seed=0, enqueue=False)
    Episode.objects.filter(pk=cell.pk).update(sweep=sweep)
    assert found(owner="bob") == {theirs.pk, cell.pk}  # a sweep's cells are its starter's
    today = timezone.now().date().isoformat()
    assert found(since=today) == {mine.pk, cell.pk}
    assert found(until=(timezone.now().date() - dt.timedelta(days=1)).isoformat()) == {theirs.pk}
    assert found(q=f"#{theirs.pk}") == {theirs.pk}
    assert found(q="easy_neg") == {mine.pk, theirs.pk, cell.pk}
    assert found(q="no-such-name") == set()


@pytest.mark.parametrize(
    "params",
    [{"status": "done"}, {"seed": "x"}, {"seed": "-1"}, {"since": "yesterday"}, {"sweep": "1.5"}],
)
def test_a_bad_filter_value_is_invalid(params) -> None:
    assert not EpisodeFilter(params, queryset=Episode.objects.all()).is_valid()


def test_needs_you_finds_your_open_seat_and_approvals_others_wait_on(
    client, user_with_role, seeded, preset, expert
) -> None:
    from procurement.models import PolicyConfig

    me = user_with_role("ops", "me")
    other = user_with_role("analyst", "other")
    human = PolicyConfig.objects.get(name="human")
    seat = episode_create(scenario=preset, policy=human, seed=None, user=me, enqueue=False)
    episode_create(scenario=preset, policy=human, seed=None, user=other, enqueue=False)
    waiting = episode_create(scenario=preset, policy=expert, seed=3, user=other, enqueue=False)
    ApprovalRequest.objects.create(
        episode=waiting, step=0, action={"action_type": "escalate"}, deadline=timezone.now()
    )
    _finished(preset, expert, seed=4, user=me)  # nothing to do on a finished run

    client.force_login(me)
    response = client.get("/episodes/?needs=you")
    assert response.status_code == 200
    assert set(_ids(response)) == {seat.pk, waiting.pk}


# --- the list page -------------------------------------------------------------------


def test_the_list_pages_by_50_and_keeps_its_filters_in_the_page_links(
    client, user_with_role, preset, expert
) -> None:
    _login(client, user_with_role)
    episodes = _many(preset, expert, 53)
    first = client.get("/episodes/?policy=expert")
    assert first.status_code == 200
    assert _ids(first) == [e.pk for e in reversed(episodes)][:50]  # newest first
    assert b"page 1 of 2" in first.content
    assert b'href="?policy=expert&amp;page=2"' in first.content
    second = client.get("/episodes/?policy=expert&page=2")
    assert _ids(second) == [e.pk for e in reversed(episodes)][50:]
    assert client.get("/episodes/?policy=random").context["page"].paginator.count == 0
    for page in ("abc", "99", "-1", "9" * 40):  # a page that is not there: the nearest one
        assert client.get(f"/episodes/?page={page}").status_code == 200


def test_the_list_shows_owner_times_and_duration(client, user_with_role, preset, expert) -> None:
    _login(client, user_with_role)
    owner = user_with_role("analyst", "carol")
    episode = _finished(preset, expert, user=owner)
    started = episode.started_at
    Episode.objects.filter(pk=episode.pk).update(finished_at=started + dt.timedelta(seconds=75))
    html = client.get("/episodes/?owner=carol").content.decode()
    assert "carol" in html and "1 min 15 s" in html
    assert started.strftime("%Y-%m-%d %H:%M") in html and "Times are UTC" in html


@pytest.mark.parametrize("query", ["status=done", "seed=abc", "since=31-12-2026", "sweep=-3"])
def test_a_bad_filter_is_a_400_that_names_the_field_and_changes_nothing(
    client, user_with_role, preset, expert, snapshot_counts, query
) -> None:
    _login(client, user_with_role)
    _many(preset, expert, 2)
    before = snapshot_counts()
    response = client.get(f"/episodes/?{query}")
    assert response.status_code == 400
    field = query.split("=")[0]
    assert f'data-error="{field}"'.encode() in response.content
    assert b"nothing is listed" in response.content
    assert snapshot_counts() == before


def test_the_api_filters_with_the_same_filterset(api_client_for, preset, expert) -> None:
    api = api_client_for("analyst")
    mine = episode_create(scenario=preset, policy=expert, seed=1, user=api.user, enqueue=False)
    episode_create(scenario=preset, policy=expert, seed=2, enqueue=False)
    ids = [e["id"] for e in api.get(f"/api/episodes/?owner={api.user.username}").json()["results"]]
    assert ids == [mine.pk]
    assert api.get("/api/episodes/?since=not-a-date").status_code == 400


def test_the_nav_and_the_overview_link_the_list(client, user_with_role, seeded) -> None:
    html = _login(client, user_with_role).get("/").content.decode()
    assert 'href="/episodes/">Episodes</a>' in html and 'id="all-episodes"' in html


# --- times ---------------------------------------------------------------------------


def test_duration_reads_with_units() -> None:
    assert [duration(s) for s in (None, 0.42, 42.4, 185, 7620)] == [
        "\N{EN DASH}",
        "0.4 s",
        "42 s",
        "3 min 05 s",
        "2 h 07 min",
    ]


def test_episode_and_sweep_pages_say_when_they_ran(client, user_with_role, preset, expert):
    _login(client, user_with_role)
    episode = _finished(preset, expert)
    html = client.get(f"/episodes/{episode.pk}/").content.decode()
    assert 'id="run-times"' in html and episode.started_at.strftime("%Y-%m-%d %H:%M") in html
    assert " UTC" in html
    sweep = sweep_create(scenarios=[preset], policies=[expert], seeds=1, enqueue=False)
    html = client.get(f"/sweeps/{sweep.pk}/").content.decode()
    assert 'id="run-times"' in html and "not yet" in html
    assert f'href="/episodes/?sweep={sweep.pk}"' in html


# --- compare -------------------------------------------------------------------------


@pytest.fixture
def pair(seeded, preset, expert):
    from procurement.models import PolicyConfig

    other = PolicyConfig.objects.get(name="random")
    return _finished(preset, expert, seed=5), _finished(preset, other, seed=5)


def test_compare_metrics_have_differences_and_steps_align(pair) -> None:
    a, b = pair
    rows = metric_rows(a, b)
    assert rows[0].name == "score" and rows[0].difference == pytest.approx(b.score - a.score)
    assert len({r.name for r in rows}) == len(rows)
    steps = aligned_steps(a, b)
    assert len(steps) == max(a.steps, b.steps)
    assert [r.step for r in steps] == list(range(len(steps)))
    assert steps[0].a.week == steps[0].b.week  # the same start
    lines = score_lines(a, b, steps)
    assert lines["a"]["steps"] == list(range(a.steps))
    assert lines["a"]["scores"][-1] == pytest.approx(a.score)


def test_an_episode_offers_the_same_seed_under_other_policies(client, user_with_role, pair):
    a, b = pair
    assert list(compare_candidates(a)) == [b]
    html = _login(client, user_with_role).get(f"/episodes/{a.pk}/").content.decode()
    assert f'href="/episodes/compare/?a={a.pk}&amp;b={b.pk}"' in html


def test_the_compare_page_shows_both_side_by_side(client, user_with_role, pair) -> None:
    a, b = pair
    response = _login(client, user_with_role).get(f"/episodes/compare/?a={a.pk}&b={b.pk}")
    assert response.status_code == 200
    html = response.content.decode()
    assert 'id="side-a"' in html and 'id="side-b"' in html and 'data-metric="score"' in html
    assert html.count('<tr data-step="') == max(a.steps, b.steps)


@pytest.mark.parametrize(
    "query", ["", "a=1", "a=x&b=2", "a=1&b=1", "a=-4&b=2", "a=1&b=" + "9" * 30]
)
def test_bad_compare_input_is_a_4xx_that_changes_nothing(
    client, user_with_role, pair, snapshot_counts, query
) -> None:
    before = snapshot_counts()
    response = _login(client, user_with_role).get(f"/episodes/compare/?{query}")
    assert response.status_code == (200 if not query else 400)
    assert b'id="compare-form"' in response.content
    assert snapshot_counts() == before


def test_comparing_a_missing_episode_is_a_404(client, user_with_role, pair) -> None:
    a, _ = pair
    response = _login(client, user_with_role).get(f"/episodes/compare/?a={a.pk}&b=999999")
    assert response.status_code == 404


# --- transcript ----------------------------------------------------------------------


def test_the_transcript_csv_has_a_row_per_decision_and_unique_unit_columns(preset, expert):
    episode = _finished(preset, expert)
    out = io.StringIO()
    assert write_transcript_csv(episode, out) == episode.steps
    header, *rows = list(csv.reader(io.StringIO(out.getvalue())))
    assert header == transcript_columns("USD") and len(header) == len(set(header))
    units = {"price (USD / unit)", "quantity (unit)", "amount (USD)", "split (share 0-1)"}
    assert units <= set(header)
    assert len(rows) == episode.steps
    first = dict(zip(header, rows[0], strict=True))
    assert first["step"] == "0" and first["action"] and first["actor"] == "policy"
    assert float(rows[-1][header.index("running score (0-1)")]) == pytest.approx(episode.score)
    # every row says why the expert chose its action, as the episode page does
    why = header.index("rationale")
    stored = list(episode.decisions.order_by("step").values_list("rationale", flat=True))
    assert [row[why] for row in rows] == stored and all(stored)


def test_the_transcript_downloads_and_prints(client, user_with_role, preset, expert) -> None:
    episode = _finished(preset, expert)
    _login(client, user_with_role)
    response = client.get(f"/episodes/{episode.pk}/transcript.csv")
    assert response.status_code == 200 and response["Content-Type"].startswith("text/csv")
    assert f'filename="episode-{episode.pk}-transcript.csv"' in response["Content-Disposition"]
    assert len(response.content.decode().splitlines()) == episode.steps + 1
    page = client.get(f"/episodes/{episode.pk}/print/")
    html = page.content.decode()
    assert page.status_code == 200 and "print.css" in html
    assert "<header>" not in html and "Log out" not in html  # no navigation on paper
    assert html.count("<tr>") == episode.steps + 1
    detail = client.get(f"/episodes/{episode.pk}/").content.decode()
    assert f'href="/episodes/{episode.pk}/transcript.csv"' in detail
    assert f'href="/episodes/{episode.pk}/print/"' in detail


@pytest.mark.parametrize("path", ["/episodes/999999/transcript.csv", "/episodes/999999/print/"])
def test_a_missing_episodes_transcript_is_a_404(client, user_with_role, seeded, path) -> None:
    assert _login(client, user_with_role).get(path).status_code == 404


@pytest.mark.parametrize(
    "path", ["/episodes/", "/episodes/compare/?a=1&b=2", "/episodes/1/transcript.csv"]
)
def test_the_new_pages_need_a_role(client, user_with_role, seeded, path) -> None:
    assert _login(client, user_with_role, None).get(path).status_code == 403
