"""Leaderboards: per (scenario, policy) mean scores with bootstrap 95 % confidence
intervals, summarised as evaluations are (negotiation.evaluation.summarise)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from typing import Any

from negotiation.evaluation import summarise

LEADERBOARD_METRICS = (
    "deal_rate",
    "buyer_share",
    "mutual_loss",
    "rounds_per_deal",
    "fulfilment_rate",
)


def leaderboard(rows: Iterable[tuple[str, str, float | None, dict[str, Any]]]) -> list[dict]:
    """Rows of (scenario, policy, score, metrics) -> one summary per (scenario, policy),
    best mean score first within each scenario."""
    groups: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for scenario, policy, score, metrics in rows:
        groups[(scenario, policy)].append({**(metrics or {}), "score": score})
    table = [
        {
            "scenario": scenario,
            "policy": policy,
            **summarise(results, key=f"{scenario}/{policy}", metrics=LEADERBOARD_METRICS),
        }
        for (scenario, policy), results in groups.items()
    ]
    table.sort(key=lambda e: (e["scenario"], -(e["score"]["mean"] or 0.0)))
    return table


def episode_leaderboard(episodes) -> list[dict]:
    return leaderboard(
        episodes.filter(score__isnull=False).values_list(
            "scenario_name", "policy_name", "score", "metrics"
        )
    )


def sweep_score_distributions(sweep) -> list[dict[str, Any]]:
    """Every finished cell's score, grouped by (scenario, policy): the distribution plot.
    ``episodes`` holds each score's episode id, in the same order (a point opens it)."""
    from procurement.models import SweepCell

    groups: dict[tuple[str, str], list[tuple[float, int | None]]] = defaultdict(list)
    rows = (
        SweepCell.objects.filter(sweep=sweep, status="finished", score__isnull=False)
        .order_by("seed")
        .values_list("scenario__name", "policy__name", "score", "episode_id")
        .iterator(chunk_size=5000)
    )
    for scenario, policy, score, episode_id in rows:
        groups[(scenario, policy)].append((round(score, 4), episode_id))
    return [
        {
            "scenario": scenario,
            "policy": policy,
            "scores": [score for score, _ in points],
            "episodes": [episode for _, episode in points],
        }
        for (scenario, policy), points in sorted(groups.items())
    ]
