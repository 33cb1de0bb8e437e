"""Sweep exports: every column once, and a JSON that says which sweep it is."""

from __future__ import annotations

import csv
import io
import json

import pytest

from procurement.models import SweepCell
from procurement.services.exports import write_sweep_csv, write_sweep_json
from procurement.services.sweeps import sweep_create


@pytest.fixture
def sweep(preset, expert):
    sweep = sweep_create(
        scenarios=[preset], policies=[expert], seeds=2, name="price test", enqueue=False
    )
    # A finished cell's metrics carry its score too, as the runner stores them.
    SweepCell.objects.filter(sweep=sweep, seed=0).update(
        status="finished", score=0.5, metrics={"score": 0.5, "deal_rate": 1.0}
    )
    return sweep


@pytest.mark.django_db
def test_the_csv_names_every_column_once(sweep) -> None:
    # Before: the header held "score" twice (the cell's, then the metric's).
    out = io.StringIO()
    write_sweep_csv(sweep, out)
    header, first, _ = list(csv.reader(io.StringIO(out.getvalue())))
    assert len(header) == len(set(header))
    assert dict(zip(header, first, strict=True))["score"] == "0.5"


@pytest.mark.django_db
def test_the_json_names_the_sweep(sweep, preset, expert) -> None:
    # Before: {"sweep": <id>} and nothing else about what was run.
    out = io.StringIO()
    write_sweep_json(sweep, out)
    about = json.loads(out.getvalue())["sweep"]
    assert about["id"] == sweep.pk and about["name"] == "price test"
    assert about["scenarios"] == [preset.name] and about["policies"] == [expert.name]
    assert (about["seeds"], about["seed_start"], about["status"]) == (2, 0, "queued")
    assert about["created_at"].startswith(str(sweep.created_at.year))
    assert about["finished_at"] is None
