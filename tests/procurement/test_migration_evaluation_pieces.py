"""0019_evaluation_compact_pieces: stored pieces of a run in play move to the compact
form and back, their outcomes unchanged, so the run resumes either side of it."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from negotiation.evaluation import (
    OUTCOME_RECORD,
    build_spec,
    outcome_record,
    run_outcomes,
    unpack_outcomes,
)

BEFORE = [("procurement", "0018_evaluation_parts")]
AFTER = [("procurement", "0019_evaluation_compact_pieces")]


@pytest.fixture
def at_latest_afterwards() -> Iterator[None]:
    """Later tests in this database need every migration, not just AFTER."""
    yield
    executor = MigrationExecutor(connection)
    executor.migrate(executor.loader.graph.leaf_nodes())


def _migrate(target):
    executor = MigrationExecutor(connection)
    executor.migrate(target)
    return executor.loader.project_state(target).apps


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("at_latest_afterwards")
def test_stored_pieces_move_to_the_compact_form_and_back() -> None:
    spec = build_spec(policies="expert,random", scenarios="bilateral", seeds=4)
    outcomes = run_outcomes(spec)
    rows = [outcome_record(o) for o in outcomes]
    apps = _migrate(BEFORE)
    evaluation = apps.get_model("procurement", "Evaluation").objects.create(
        policies=["expert", "random"], scenarios=["bilateral"], seeds=4, episodes=8
    )
    piece_model = apps.get_model("procurement", "EvaluationPiece")
    piece_model.objects.create(evaluation=evaluation, lane="rule", outcomes=rows[:5])
    piece_model.objects.create(evaluation=evaluation, lane="rule", outcomes=rows[5:])

    apps = _migrate(AFTER)
    pieces = apps.get_model("procurement", "EvaluationPiece").objects.order_by("pk")
    assert [p.episodes for p in pieces] == [5, 3]
    assert [o for p in pieces for o in unpack_outcomes(p.data)] == outcomes
    assert [o.decisions for p in pieces for o in unpack_outcomes(p.data)] == [
        tuple(r[OUTCOME_RECORD.index("decisions")]) for r in rows
    ]  # the timings too, to the microsecond
    evaluation_model = apps.get_model("procurement", "Evaluation")
    assert evaluation_model.objects.get(pk=evaluation.pk).exposed == []

    apps = _migrate(BEFORE)
    pieces = apps.get_model("procurement", "EvaluationPiece").objects.order_by("pk")
    assert [p.outcomes for p in pieces] == [rows[:5], rows[5:]]
