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

FIELDS = Decision.RECORD_FIELDS
COLUMNS = ("episode_id", *FIELDS, "actor", "created_at")
JSON_FIELDS = {"action", "error", "response", "events", "state"}


def _decision(episode_id: int, record: dict[str, Any], actor: str) -> Decision:
    return Decision(episode_id=episode_id, actor=actor, **{f: record[f] for f in FIELDS})


def _dumps(value: Any) -> str | None:
    return None if value is None else json.dumps(value, separators=(",", ":"))


def insert_decisions(episode_id_records: Iterable[tuple[int, dict[str, Any]]], actor: str) -> int:
    """Insert (episode_id, step record) pairs; returns the number of rows written."""
    if connection.vendor != "postgresql":
        objs = [_decision(eid, record, actor) for eid, record in episode_id_records]
        Decision.objects.bulk_create(objs, batch_size=1000)
        return len(objs)
    now = timezone.now()
    count = 0
    sql = f"COPY {Decision._meta.db_table} ({', '.join(COLUMNS)}) FROM STDIN"
    with connection.cursor() as cursor, cursor.cursor.copy(sql) as copy:
        for episode_id, record in episode_id_records:
            values = (_dumps(record[f]) if f in JSON_FIELDS else record[f] for f in FIELDS)
            copy.write_row((episode_id, *values, actor, now))
            count += 1
    return count
