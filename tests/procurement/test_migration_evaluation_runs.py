"""0017_evaluation_runs: evaluations stored before runs had a life cycle stay readable,
as finished runs with every episode done."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.utils import timezone

BEFORE = [("procurement", "0016_supplier_seat")]
AFTER = [("procurement", "0017_evaluation_runs")]


@pytest.fixture
def at_latest_afterwards() -> Iterator[None]:
    """Later tests in this database need every migration, not just AFTER."""
    yield
    executor = MigrationExecutor(connection)
    executor.migrate(executor.loader.graph.leaf_nodes())


@pytest.mark.django_db(transaction=True)
@pytest.mark.usefixtures("at_latest_afterwards")
def test_stored_evaluations_become_finished_runs() -> None:
    executor = MigrationExecutor(connection)
    executor.migrate(BEFORE)
    old = executor.loader.project_state(BEFORE).apps.get_model("procurement", "Evaluation")
    row = old.objects.create(
        policies=["expert"], scenarios=["bilateral"], seeds=3, episodes=3, started_at=timezone.now()
    )
    executor = MigrationExecutor(connection)
    executor.migrate(AFTER)
    executor = MigrationExecutor(connection)  # read through today's model: every column
    executor.migrate(executor.loader.graph.leaf_nodes())

    from procurement.models import Evaluation

    evaluation = Evaluation.objects.get(pk=row.pk)
    assert evaluation.status == "finished" and evaluation.is_terminal
    assert evaluation.done_episodes == 3 and evaluation.progress == 1.0
    assert evaluation.finished_at == evaluation.created_at
    assert evaluation.outcomes == [] and evaluation.queue == "cpu"
    assert Evaluation._meta.get_field("status").default == "queued"  # new runs start queued
