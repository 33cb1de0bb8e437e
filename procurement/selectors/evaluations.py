"""Reads for evaluation pages and the API: the list, and one evaluation's chart data."""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet

from procurement.models import Evaluation


def evaluation_list() -> QuerySet[Evaluation]:
    """Newest first, without the (large) league tables."""
    return Evaluation.objects.select_related("created_by").defer(
        "leaderboard", "ratings", "matrix", "supplier_table"
    )


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
