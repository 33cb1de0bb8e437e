"""Sweep exports: one row per cell with every metric as a column (each column once); the
JSON names the sweep it came from."""

from __future__ import annotations

import csv
import json
from typing import IO, Any

from procurement.models import Sweep, SweepCell
from procurement.selectors.sweeps import sweep_pins

BASE_COLUMNS = ["scenario", "policy", "seed", "status", "score", "episode_id"]


def _rows(sweep: Sweep):
    return (
        SweepCell.objects.filter(sweep=sweep)
        .order_by("scenario__name", "policy__name", "seed")
        .values_list(
            "scenario__name", "policy__name", "seed", "status", "score", "episode_id", "metrics"
        )
        .iterator(chunk_size=2000)
    )


def write_sweep_csv(sweep: Sweep, out: IO[str]) -> int:
    rows = list(_rows(sweep))
    # A cell's metrics repeat its score: a base column already says it.
    metric_names = sorted({k for *_, metrics in rows for k in (metrics or {})} - {*BASE_COLUMNS})
    writer = csv.writer(out)
    writer.writerow(BASE_COLUMNS + metric_names)
    for *base, metrics in rows:
        writer.writerow(list(base) + [(metrics or {}).get(k, "") for k in metric_names])
    return len(rows)


def _when(moment) -> str | None:
    return moment.isoformat() if moment else None


def sweep_header(sweep: Sweep) -> dict[str, Any]:
    """What a sweep's export says about the sweep: enough to know, from the file alone,
    what was run, when, and with which versions of its scenarios and policies."""
    return {
        "id": sweep.pk,
        "name": str(sweep),
        "status": sweep.status,
        "scenarios": sorted(sweep.scenarios.values_list("name", flat=True)),
        "policies": sorted(sweep.policies.values_list("name", flat=True)),
        "seeds": sweep.seeds,
        "seed_start": sweep.seed_start,
        "cells": {
            "total": sweep.total_cells,
            "done": sweep.done_cells,
            "failed": sweep.failed_cells,
        },
        "versions": sweep_pins(sweep.pk).versions(),
        "created_by": sweep.created_by.get_username() if sweep.created_by else None,
        "created_at": _when(sweep.created_at),
        "started_at": _when(sweep.started_at),
        "finished_at": _when(sweep.finished_at),
    }


def write_sweep_json(sweep: Sweep, out: IO[str]) -> int:
    rows = [dict(zip([*BASE_COLUMNS, "metrics"], row, strict=True)) for row in _rows(sweep)]
    json.dump({"sweep": sweep_header(sweep), "cells": rows}, out, indent=1)
    out.write("\n")
    return len(rows)
