"""Fast bulk writes of decision rows.

On PostgreSQL rows stream through COPY (psycopg 3): Django 5.2's UNNEST-based
bulk_create makes psycopg quote every array element client-side, which costs more than
the engine playing the episodes. Elsewhere (SQLite) bulk_create does the job. Either way
the caller's transaction makes a batch all-or-nothing, and a record that is not strict
JSON (NaN or infinity, e.g. from a policy with absurd parameters) is refused with a
ValueError on every database alike, instead of being stored on one and refused on another.
Database errors from COPY are Django's (wrapped), like those of any other query.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from django.db import connection
from django.utils import timezone

from negotiation.suppliers.guard import public_repairs
from procurement.models import Decision

FIELDS = Decision.STORED_FIELDS
COLUMNS = ("episode_id", *FIELDS, "created_at")
JSON_FIELDS = {"action", "error", "response", "events", "state", "guard_repairs"}


def _dumps(value: Any) -> str | None:
    return None if value is None else json.dumps(value, separators=(",", ":"), allow_nan=False)


def stored_values(record: dict[str, Any], actor: str | None = None) -> dict[str, Any]:
    """A step record as the Decision columns store it: the record's own fields, its
    decision metadata (defaults where a rule policy left it out), and ``actor`` when the
    caller decides who acted (a human move)."""
    values = {**Decision.META_DEFAULTS, **{f: record[f] for f in FIELDS if f in record}}
    if actor is not None:
        values["actor"] = actor
    values["guard_repairs"] = public_repairs(values["guard_repairs"])
    return values


def _decision(episode_id: int, values: dict[str, Any]) -> Decision:
    for f in JSON_FIELDS:
        _dumps(values[f])  # strict JSON, as on PostgreSQL
    return Decision(episode_id=episode_id, **values)


def insert_decisions(
    episode_id_records: Iterable[tuple[int, dict[str, Any]]], actor: str | None = None
) -> int:
    """Insert (episode_id, step record) pairs; returns the number of rows written.
    ``actor`` overrides the records' own (None: each record says who acted)."""
    if connection.vendor != "postgresql":
        objs = [_decision(eid, stored_values(r, actor)) for eid, r in episode_id_records]
        Decision.objects.bulk_create(objs, batch_size=1000)
        return len(objs)
    now = timezone.now()
    count = 0
    sql = f"COPY {Decision._meta.db_table} ({', '.join(COLUMNS)}) FROM STDIN"
    with (
        connection.wrap_database_errors,
        connection.cursor() as cursor,
        cursor.cursor.copy(sql) as copy,
    ):
        for episode_id, record in episode_id_records:
            stored = stored_values(record, actor)
            values = (_dumps(stored[f]) if f in JSON_FIELDS else stored[f] for f in FIELDS)
            copy.write_row((episode_id, *values, now))
            count += 1
    return count
