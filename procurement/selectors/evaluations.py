"""Reads for evaluation pages, the live stream and the API: the list, one evaluation's
chart data and progress, its episodes per cell, and its leaderboard as CSV rows."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from django.db.models import QuerySet

from negotiation.evaluation import Outcome
from procurement.errors import NotFound
from procurement.models import Evaluation

# An evaluation keeps one row per episode up to this many (a list per episode, in the
# order of OUTCOME_FIELDS): enough for every cell's episode list on the page.
MAX_STORED_OUTCOMES = 20_000
OUTCOME_FIELDS = (
    "scenario",
    "tier",
    "lineup",
    "policy",
    "seed",
    "replay",
    "score",
    "deal_rate",
    "buyer_share",
    "success",
    "opponent",
    "seconds",
    "prompt_tokens",
    "completion_tokens",
    "money",
)
# The leaderboard's CSV columns: (header, path into a leaderboard row).
CSV_COLUMNS = (
    ("scenario", ("scenario",)),
    ("tier", ("tier",)),
    ("buyer", ("policy",)),
    ("episodes", ("episodes",)),
    ("seeds", ("seeds",)),
    ("score_mean", ("score", "mean")),
    ("score_ci_low", ("score", "ci_low")),
    ("score_ci_high", ("score", "ci_high")),
    ("best", ("best",)),
    ("tied_with_best", ("tied",)),
    ("vs_best_mean", ("vs_best", "mean")),
    ("vs_best_ci_low", ("vs_best", "ci_low")),
    ("vs_best_ci_high", ("vs_best", "ci_high")),
    ("pass_k", ("pass_k", "value")),
    ("k", ("pass_k", "k")),
    ("worst_score", ("worst", "score")),
    ("worst_lineup", ("worst", "lineup")),
    ("deal_rate", ("deal_rate",)),
    ("buyer_share", ("buyer_share",)),
    ("mutual_loss", ("mutual_loss",)),
    ("rounds_per_deal", ("rounds_per_deal",)),
    ("invalid_action_rate", ("invalid_action_rate",)),
    ("prompt_tokens_per_episode", ("cost", "prompt_tokens")),
    ("completion_tokens_per_episode", ("cost", "completion_tokens")),
    ("decision_p50_s", ("cost", "decision_p50_s")),
    ("decision_p95_s", ("cost", "decision_p95_s")),
    ("episode_p50_s", ("cost", "episode_p50_s")),
    ("episode_p95_s", ("cost", "episode_p95_s")),
    ("money_per_episode", ("cost", "money")),
)


def outcome_row(outcome: Outcome) -> list[Any]:
    """One episode as stored on its evaluation (OUTCOME_FIELDS, in order)."""
    return [getattr(outcome, name) for name in OUTCOME_FIELDS]


def evaluation_list() -> QuerySet[Evaluation]:
    """Newest first, without the (large) league tables."""
    return Evaluation.objects.select_related("created_by").defer(
        "leaderboard", "ratings", "matrix", "supplier_table", "pinned", "outcomes"
    )


def evaluation_payload(evaluation: Evaluation) -> dict[str, Any]:
    """A run's state as the page and its live stream show it."""
    return {
        "id": evaluation.pk,
        "status": evaluation.status,
        "queue": evaluation.queue,
        "episodes": evaluation.episodes,
        "llm_episodes": evaluation.llm_episodes,
        "done_episodes": evaluation.done_episodes,
        "progress": evaluation.progress,
        "current_cell": evaluation.current_cell,
        "error": evaluation.error,
        "started_at": evaluation.started_at.isoformat() if evaluation.started_at else None,
        "finished_at": evaluation.finished_at.isoformat() if evaluation.finished_at else None,
    }


def evaluation_snapshot(*, evaluation_id: int) -> tuple[str, dict[str, Any]]:
    """The run's group and its state now; NotFound when there is none."""
    evaluation = evaluation_list().filter(pk=evaluation_id).first()
    if evaluation is None:
        raise NotFound(f"No evaluation {evaluation_id}.")
    payload = {"type": "evaluation.snapshot", "evaluation": evaluation_payload(evaluation)}
    return evaluation.group_name, payload


def evaluation_sections(evaluation: Evaluation) -> list[dict[str, Any]]:
    """Per (scenario, tier), in stored order, for the page's tables: the leaderboard rows,
    the matrix's index (its heatmap's element id) and the suppliers' rows."""
    sections: dict[tuple[str, str | None], dict[str, Any]] = {}
    for row in evaluation.leaderboard:
        key = (row["scenario"], row.get("tier"))
        label = row["scenario"] if key[1] is None else f"{row['scenario']} @ {key[1]}"
        section = sections.setdefault(key, {"label": label, "rows": [], "suppliers": []})
        section["rows"].append(row)
    for row in evaluation.supplier_table or []:
        section = sections.get((row["scenario"], row.get("tier")))
        if section is not None:
            section["suppliers"].append(row)
    for i, board in enumerate(evaluation.matrix or []):
        section = sections.get((board["scenario"], board.get("tier")))
        if section is not None:
            section["matrix"] = i
    return list(sections.values())


def cell_episodes(
    evaluation: Evaluation, *, scenario: str, tier: str | None, lineup: str, buyer: str
) -> list[dict[str, Any]]:
    """The stored episodes of one matrix cell (scenario, tier, line-up, buyer), by seed
    and replay; empty when the evaluation kept none (older ones, or too many)."""
    rows = (dict(zip(OUTCOME_FIELDS, r, strict=True)) for r in evaluation.outcomes or [])
    return [
        r
        for r in rows
        if (r["scenario"], r["tier"], r["lineup"], r["policy"]) == (scenario, tier, lineup, buyer)
    ]


def leaderboard_csv_rows(evaluation: Evaluation) -> Iterator[list[Any]]:
    """The header, then one line per leaderboard row (CSV_COLUMNS)."""
    yield [header for header, _ in CSV_COLUMNS]
    for row in evaluation.leaderboard:
        line = []
        for _, path in CSV_COLUMNS:
            value: Any = row
            for key in path:
                value = value.get(key) if isinstance(value, dict) else None
            line.append("" if value is None else value)
        yield line
