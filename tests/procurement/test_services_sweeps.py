"""A sweep plays the scenario and policy versions it was created with, whatever is edited
while it runs."""

from __future__ import annotations

import io

import pytest

from procurement.models import Episode, PolicyConfig, Scenario, SweepCell
from procurement.services.exports import write_sweep_csv
from procurement.services.policies import policy_create, policy_update
from procurement.services.scenarios import scenario_copy, scenario_update
from procurement.services.sweep_runner import sweep_cells_run, sweep_start
from procurement.services.sweeps import sweep_create, sweep_finish

pytestmark = pytest.mark.django_db


@pytest.fixture
def grid(preset):
    """An editable scenario and a parametrised policy, in a sweep of 8 cells."""
    scenario = scenario_copy(source=preset, name="pinned-scenario")
    policy = policy_create(name="lowball-half", policy="greedy_lowball", params={"fraction": 0.5})
    sweep = sweep_create(scenarios=[scenario], policies=[policy], seeds=8, enqueue=False)
    return scenario, policy, sweep


def _cell_ids(sweep) -> list[int]:
    return [c for chunk in sweep_start(sweep_id=sweep.pk) for c in chunk.cell_ids]


def test_edits_mid_run_do_not_reach_the_sweep(grid) -> None:
    scenario, policy, sweep = grid
    pinned_config, pinned_snapshot = scenario.engine_config(), policy.snapshot()
    cell_ids = _cell_ids(sweep)
    assert sweep_cells_run(sweep_id=sweep.pk, cell_ids=cell_ids[:3]) == 3
    # edited mid-run: both get a new version
    scenario_update(
        scenario=scenario, config={**scenario.config, "weeks": scenario.config["weeks"] + 2}
    )
    policy_update(policy_config=policy, params={"fraction": 0.9})
    scenario.refresh_from_db()
    policy.refresh_from_db()
    assert (scenario.version, policy.version) == (2, 2)
    assert sweep_cells_run(sweep_id=sweep.pk, cell_ids=cell_ids[3:]) == 5
    episodes = list(Episode.objects.filter(sweep=sweep))
    assert len(episodes) == 8
    assert {e.scenario_version for e in episodes} == {1}
    assert {e.policy_version for e in episodes} == {1}
    assert all(e.scenario_snapshot == pinned_config for e in episodes)
    assert all(e.policy_snapshot == pinned_snapshot for e in episodes)
    sweep = sweep_finish(sweep=sweep)
    [row] = sweep.summary["leaderboard"]
    assert row["episodes"] == 8
    assert sweep.summary["versions"] == {
        "scenarios": {"pinned-scenario": 1},
        "policies": {"lowball-half": 1},
    }


def test_a_policy_turned_llm_mid_run_keeps_its_pinned_queue(grid) -> None:
    _, policy, sweep = grid
    policy_update(policy_config=policy, policy="llm", params={}, backend="vllm", model="/m")
    assert {chunk.queue for chunk in sweep_start(sweep_id=sweep.pk)} == {"cpu"}


def test_a_new_sweep_pins_the_current_versions(grid) -> None:
    scenario, policy, _ = grid
    scenario_update(
        scenario=scenario, config={**scenario.config, "weeks": scenario.config["weeks"] + 1}
    )
    later = sweep_create(scenarios=[scenario], policies=[policy], seeds=1, enqueue=False)
    scenario.refresh_from_db()
    assert later.pinned["scenarios"][str(scenario.pk)] == {
        "version": 2,
        "config": scenario.engine_config(),
    }
    assert later.pinned["policies"][str(policy.pk)] == {"version": 1, "snapshot": policy.snapshot()}


def test_deleting_what_a_finished_sweep_refers_to_is_refused(grid, snapshot_counts) -> None:
    from procurement.services.policies import policy_delete
    from procurement.services.protection import InUseError
    from procurement.services.scenarios import scenario_delete

    scenario, policy, sweep = grid
    sweep_cells_run(sweep_id=sweep.pk, cell_ids=_cell_ids(sweep))
    sweep = sweep_finish(sweep=sweep)
    export, before = io.StringIO(), snapshot_counts()
    write_sweep_csv(sweep, export)
    with pytest.raises(InUseError, match="'pinned-scenario' is used by 1 sweep"):
        scenario_delete(scenario=scenario)
    with pytest.raises(InUseError, match="'lowball-half' is used by 1 sweep\\(s\\) and 8 episode"):
        policy_delete(policy_config=policy)
    assert snapshot_counts() == before
    after = io.StringIO()
    write_sweep_csv(sweep, after)
    assert after.getvalue() == export.getvalue()
    assert SweepCell.objects.filter(sweep=sweep, status="finished").count() == 8
    # unused ones can still go
    spare = scenario_copy(source=scenario, name="spare")
    scenario_delete(scenario=spare)
    assert not Scenario.objects.filter(name="spare").exists()
    unused = policy_create(name="unused", policy="expert")
    policy_delete(policy_config=unused)
    assert not PolicyConfig.objects.filter(name="unused").exists()
