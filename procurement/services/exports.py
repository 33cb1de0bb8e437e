"""Exports. Sweeps: one row per cell with every metric as a column (each column once); the
JSON names the sweep it came from. An episode's transcript: one row per decision, with
each action field under a header that names its unit."""

from __future__ import annotations

import csv
import json
from typing import IO, Any

from negotiation.action_spec import FIELD_SPECS, field_unit
from negotiation.config import scenario_currency
from procurement.models import Episode, Sweep, SweepCell
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


TEXT_FIELDS = ("message", "rationale")  # their own columns: the decision's, or the action's
ACTION_FIELDS = [f for f, spec in FIELD_SPECS.items() if f not in TEXT_FIELDS]


def _header(field: str, currency: str) -> str:
    """A figure's header names its unit from ``FIELD_SPECS`` (the pages' one declaration);
    the item's unit differs per requirement, so a column says "unit". A share column keeps
    the engine's 0-1 fraction, where pages show per cent."""
    if not FIELD_SPECS[field].unit:
        return field
    unit = field_unit(field, currency)
    return f"{field} ({'share 0-1' if unit == '%' else unit})"


def transcript_columns(currency: str) -> list[str]:
    """The transcript's headers, each once, in ``transcript_rows``' order."""
    return [
        "step",
        "week",
        "actor",
        "action",
        "valid",
        *(_header(f, currency) for f in ACTION_FIELDS),
        "message",
        "rationale",
        "error",
        "supplier response",
        f"supplier price ({field_unit('price', currency)})",
        "supplier message",
        "reward",
        "running score (0-1)",
    ]


def episode_transcript_columns(episode: Episode) -> list[str]:
    return transcript_columns(scenario_currency(episode.scenario_snapshot or {}))


def transcript_rows(episode: Episode) -> list[list[Any]]:
    """One row per stored decision, in step order, in ``transcript_columns``' order: what the
    CSV holds and the printable page shows."""
    rows = []
    for d in episode.decisions.order_by("step"):
        action = d.action if isinstance(d.action, dict) else {}
        response = d.response or {}
        error = d.error or {}
        rows.append(
            [
                d.step,
                d.week,
                d.actor,
                action.get("action_type", ""),
                d.valid,
                *(action.get(f, "") for f in ACTION_FIELDS),
                d.message or action.get("message") or "",
                d.rationale or action.get("rationale") or "",
                error.get("message", "") if isinstance(error, dict) else str(error),
                response.get("response", ""),
                "" if response.get("price") is None else response["price"],
                response.get("message", ""),
                round(d.reward, 6),
                round(d.running_score, 6),
            ]
        )
    return rows


def write_transcript_csv(episode: Episode, out: IO[str]) -> int:
    rows = transcript_rows(episode)
    writer = csv.writer(out)
    writer.writerow(episode_transcript_columns(episode))
    writer.writerows(rows)
    return len(rows)
