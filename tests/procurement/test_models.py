"""Models and their database constraints (PostgreSQL for the constraint tests)."""

from __future__ import annotations

import pytest
from django.db import IntegrityError, connection, transaction

from procurement.models import (
    Decision,
    Episode,
    EpisodeStatus,
    PolicyConfig,
    Sweep,
    SweepCell,
)
from procurement.services.episodes import episode_build


def _decision(episode: Episode, step: int) -> Decision:
    return Decision(
        episode=episode,
        step=step,
        week=0,
        action={"action_type": "defer"},
        valid=True,
        reward=0.0,
        running_score=0.0,
    )


@pytest.fixture
def episode(preset, expert) -> Episode:
    episode = episode_build(scenario=preset, policy=expert, seed=3)
    episode.save()
    return episode


@pytest.mark.postgres
@pytest.mark.django_db
def test_decision_step_is_unique_per_episode(episode, preset, expert) -> None:
    _decision(episode, 0).save()
    with pytest.raises(IntegrityError), transaction.atomic():
        _decision(episode, 0).save()
    other = episode_build(scenario=preset, policy=expert, seed=4)
    other.save()
    _decision(other, 0).save()  # the same step in another episode is fine
    assert Decision.objects.count() == 2


@pytest.mark.postgres
@pytest.mark.django_db
def test_bulk_insert_of_a_duplicate_step_is_rejected_whole(episode) -> None:
    _decision(episode, 0).save()
    with pytest.raises(IntegrityError), transaction.atomic():
        Decision.objects.bulk_create([_decision(episode, 1), _decision(episode, 0)])
    assert list(episode.decisions.values_list("step", flat=True)) == [0]


@pytest.mark.postgres
@pytest.mark.django_db
def test_sweep_cell_is_unique_per_combination(preset, expert) -> None:
    sweep = Sweep.objects.create(seeds=1, total_cells=1)
    SweepCell.objects.create(sweep=sweep, scenario=preset, policy=expert, seed=0)
    with pytest.raises(IntegrityError), transaction.atomic():
        SweepCell.objects.create(sweep=sweep, scenario=preset, policy=expert, seed=0)
    SweepCell.objects.create(sweep=sweep, scenario=preset, policy=expert, seed=1)
    other = Sweep.objects.create(seeds=1, total_cells=1)
    SweepCell.objects.create(sweep=other, scenario=preset, policy=expert, seed=0)
    assert SweepCell.objects.count() == 3


@pytest.mark.postgres
@pytest.mark.django_db
def test_dashboard_indexes_exist_in_postgresql() -> None:
    with connection.cursor() as cursor:
        names = {
            c
            for table in ("procurement_episode", "procurement_sweep", "procurement_sweepcell")
            for c in connection.introspection.get_constraints(cursor, table)
        }
    for index in (
        "episode_status_recent",
        "episode_scenario_policy",
        "episode_recent",
        "sweep_status_recent",
        "sweep_cell_status",
        "sweep_cell_unique",
    ):
        assert index in names


@pytest.mark.django_db
def test_episode_snapshots_survive_edits_and_their_scenario_cannot_be_deleted(
    preset, expert
) -> None:
    from procurement.services.protection import InUseError
    from procurement.services.scenarios import scenario_copy, scenario_delete, scenario_update

    scenario = scenario_copy(source=preset, name="mine")
    episode = episode_build(scenario=scenario, policy=expert, seed=1)
    episode.save()
    weeks = episode.scenario_snapshot["weeks"]
    scenario_update(scenario=scenario, config={**scenario.config, "weeks": weeks + 1})
    episode.refresh_from_db()
    assert episode.scenario_snapshot["weeks"] == weeks
    assert episode.scenario_version == 1
    with pytest.raises(InUseError, match="'mine' is used by 0 sweep\\(s\\) and 1 episode"):
        scenario_delete(scenario=scenario)  # results refer to it: refused, not orphaned
    episode.refresh_from_db()
    assert episode.scenario_id == scenario.pk
    assert episode.scenario_name == "mine"
    assert episode.policy_snapshot == expert.snapshot()


@pytest.mark.django_db
def test_episode_properties(episode) -> None:
    assert episode.status == EpisodeStatus.QUEUED and not episode.is_terminal
    assert episode.group_name == f"episode-{episode.pk}"
    assert episode.duration_seconds is None
    assert str(episode).startswith(f"#{episode.pk} easy_negotiation / expert")
    episode.status = EpisodeStatus.CANCELLED
    assert episode.is_terminal


@pytest.mark.django_db
def test_policy_config_llm_flag_and_snapshot() -> None:
    rule = PolicyConfig.objects.create(name="r", policy="expert")
    llm = PolicyConfig.objects.create(name="l", policy="llm", backend="vllm", model="/m")
    assert not rule.uses_llm and llm.uses_llm
    assert llm.snapshot() == {
        "name": "l",
        "policy": "llm",
        "params": {},
        "backend": "vllm",
        "model": "/m",
    }


@pytest.mark.django_db
def test_sweep_progress(preset, expert) -> None:
    sweep = Sweep.objects.create(seeds=2, total_cells=4, done_cells=1, failed_cells=1)
    assert sweep.progress == 0.5
    assert Sweep(seeds=1).progress == 0.0
    assert sweep.group_name == f"sweep-{sweep.pk}"
