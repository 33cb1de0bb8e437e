"""Sweep exports: one row per cell with every metric as a column."""

from __future__ import annotations

import csv
import json
from typing import IO

from procurement.models import Sweep, SweepCell

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
    metric_names = sorted({k for *_, metrics in rows for k in (metrics or {})})
    writer = csv.writer(out)
    writer.writerow(BASE_COLUMNS + metric_names)
    for *base, metrics in rows:
        writer.writerow(list(base) + [(metrics or {}).get(k, "") for k in metric_names])
    return len(rows)


def write_sweep_json(sweep: Sweep, out: IO[str]) -> int:
    rows = [dict(zip([*BASE_COLUMNS, "metrics"], row, strict=True)) for row in _rows(sweep)]
    json.dump({"sweep": sweep.pk, "cells": rows}, out, indent=1)
    out.write("\n")
    return len(rows)
