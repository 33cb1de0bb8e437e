"""Reads for evaluation pages and the API: the list, and one evaluation's chart data."""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet

from procurement.models import Evaluation


def evaluation_list() -> QuerySet[Evaluation]:
    """Newest first, without the (large) leaderboard and ratings."""
    return Evaluation.objects.select_related("created_by").defer("leaderboard", "ratings")


def evaluation_sections(evaluation: Evaluation) -> list[dict[str, Any]]:
    """The leaderboard split per (scenario, tier), in stored order, for the page's tables."""
    sections: dict[tuple[str, str | None], dict[str, Any]] = {}
    for row in evaluation.leaderboard:
        key = (row["scenario"], row.get("tier"))
        label = row["scenario"] if key[1] is None else f"{row['scenario']} @ {key[1]}"
        sections.setdefault(key, {"label": label, "rows": []})["rows"].append(row)
    return list(sections.values())
