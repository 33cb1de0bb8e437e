"""Fast bulk writes of decision rows.

On PostgreSQL rows stream through COPY (psycopg 3): Django 5.2's UNNEST-based
bulk_create makes psycopg quote every array element client-side, which costs more than
the engine playing the episodes. Elsewhere (SQLite) bulk_create does the job. Either way
the caller's transaction makes a batch all-or-nothing.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from django.db import connection
from django.utils import timezone

from procurement.models import Decision

COLUMNS = (
    "episode_id",
    "step",
    "week",
    "action",
    "valid",
    "error",
    "response",
    "reward",
    "running_score",
    "events",
    "state",
    "actor",
    "created_at",
)
JSON_COLUMNS = {"action", "error", "response", "events", "state"}


def _dumps(value: Any) -> str | None:
    return None if value is None else json.dumps(value, separators=(",", ":"))


def insert_decisions(episode_id_records: Iterable[tuple[int, dict[str, Any]]], actor: str) -> int:
    """Insert (episode_id, step record) pairs; returns the number of rows written."""
    now = timezone.now()
    rows = (
        (
            episode_id, r["step"], r["week"], _dumps(r["action"]), r["valid"],
            _dumps(r["error"]), _dumps(r["response"]), r["reward"], r["running_score"],
            _dumps(r["events"] or []), _dumps(r["state"] or {}), actor, now,
        )
        for episode_id, r in episode_id_records
    )  # fmt: skip
    if connection.vendor != "postgresql":
        objs = [
            Decision(**{c: json.loads(v) if c in JSON_COLUMNS and v is not None else v
                        for c, v in zip(COLUMNS, row, strict=True)})
            for row in rows
        ]  # fmt: skip
        Decision.objects.bulk_create(objs, batch_size=1000)
        return len(objs)
    count = 0
    sql = f"COPY {Decision._meta.db_table} ({', '.join(COLUMNS)}) FROM STDIN"
    with connection.cursor() as cursor, cursor.cursor.copy(sql) as copy:
        for row in rows:
            copy.write_row(row)
            count += 1
    return count
