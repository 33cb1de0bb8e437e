"""Leaderboards of sweeps and single episodes: intervals inside the scores' range, and deal
metrics only where there were deals (as evaluations report them)."""

from __future__ import annotations

import re

import pytest

from procurement.models import Episode
from procurement.selectors.aggregates import leaderboard
from procurement.services.episodes import episode_create


def test_a_skewed_small_sample_keeps_its_interval_inside_the_scores() -> None:
    # Before: mean ± t·sd gave -0.355 to 0.755 for these five scores (one in five won).
    scores = [0.0, 0.0, 0.0, 0.0, 1.0]
    (row,) = leaderboard(("s", "p", x, {"deal_rate": 1.0}) for x in scores)
    low, high = row["score"]["ci_low"], row["score"]["ci_high"]
    assert min(scores) <= low <= row["score"]["mean"] <= high <= max(scores)


def test_tiny_score_differences_stay_inside_their_range() -> None:
    # Before: "-0.001 to 0.002" on a sweep whose scores all lay in [0, 0.001].
    scores = [0.0, 0.0, 0.0, 0.001, 0.0, 0.0]
    (row,) = leaderboard(("s", "p", x, {}) for x in scores)
    assert 0.0 <= row["score"]["ci_low"] <= row["score"]["ci_high"] <= 0.001


def test_the_leaderboard_summarises_as_evaluations_do() -> None:
    from negotiation.evaluation import summarise

    results = [
        ({"deal_rate": 1.0, "buyer_share": 0.6, "rounds_per_deal": 3.0}, 0.7),
        ({"deal_rate": 0.0, "buyer_share": 0.0, "rounds_per_deal": 0.0}, 0.1),
        ({"deal_rate": 0.5, "buyer_share": 0.8, "rounds_per_deal": 5.0}, 0.4),
    ]
    (row,) = leaderboard(("s", "p", score, m) for m, score in results)
    assert row["buyer_share"] == pytest.approx(0.7)  # the two episodes with a deal
    assert row["rounds_per_deal"] == pytest.approx(4.0)
    assert row["deal_rate"] == pytest.approx(0.5)  # every episode
    evaluated = summarise([{**m, "score": s} for m, s in results], key="s/p")
    assert row["score"] == evaluated["score"]


def test_buyer_share_without_a_deal_is_undefined_not_zero() -> None:
    # Before: 0.000, where the evaluation page showed a dash.
    (row,) = leaderboard([("s", "p", 0.1, {"deal_rate": 0.0, "buyer_share": 0.0})])
    assert row["buyer_share"] is None and row["rounds_per_deal"] is None


@pytest.mark.django_db
def test_the_overview_shows_a_dash_for_buyer_share_without_deals(
    client, user_with_role, preset, expert
) -> None:
    episode = episode_create(scenario=preset, policy=expert, seed=1, enqueue=False)
    Episode.objects.filter(pk=episode.pk).update(
        status="finished", score=0.05, metrics={"deal_rate": 0.0, "buyer_share": 0.0}
    )
    client.force_login(user_with_role("analyst"))
    html = client.get("/").content.decode()
    row = html[html.rindex("<td>easy_negotiation</td>") :].split("</tr>")[0]
    *_, deal_rate, buyer_share = re.findall(r'<td class="num">([^<]*)</td>', row)
    assert (deal_rate, buyer_share) == ("0.00", "\u2013")
