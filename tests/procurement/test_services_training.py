"""A training request the service refuses is a clear error of the one family
(procurement.errors) naming the field at fault, and creates nothing."""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

import pytest
from django.utils import timezone

from procurement.errors import ApplicationError, Conflict
from procurement.models import PolicyConfig, Scenario, TrainingRun
from procurement.services.policies import policy_create
from procurement.services.recovery import recover_trainings
from procurement.services.sweep_runner import sweep_cells_run, sweep_start
from procurement.services.sweeps import sweep_create
from procurement.services.training import (
    TrainingRequest,
    training_cancel,
    training_create,
    training_execute,
)

pytestmark = pytest.mark.django_db


@pytest.fixture
def expert_episodes(preset, expert):
    """Two finished expert episodes of easy_negotiation, played by a sweep."""
    sweep = sweep_create(scenarios=[preset], policies=[expert], seeds=2, enqueue=False)
    for chunk in sweep_start(sweep_id=sweep.pk):
        sweep_cells_run(sweep_id=sweep.pk, cell_ids=chunk.cell_ids)
    return sweep


GOOD = TrainingRequest(
    kind="sft", base="smollm2", scenarios=["easy_negotiation"], episodes=2, name="sft-one"
)


def refused(request: TrainingRequest, snapshot_counts) -> ApplicationError:
    before = snapshot_counts()
    with pytest.raises(ApplicationError) as caught:
        training_create(request=request, enqueue=False)
    assert snapshot_counts() == before
    assert not TrainingRun.objects.exists()
    return caught.value


def test_a_good_request_creates_a_queued_run_with_its_episodes(expert_episodes) -> None:
    run = training_create(request=GOOD, enqueue=False)
    assert run.status == "queued"
    assert len(run.source_episode_ids) == 2
    assert run.output_dir.endswith("training/sft-one")


def test_unknown_scenario(expert_episodes, snapshot_counts) -> None:
    error = refused(replace(GOOD, scenarios=["easy_negotiation", "atlantis"]), snapshot_counts)
    assert error.extra["field"] == "scenarios"
    assert "atlantis" in error.message


def test_no_stored_episodes_match(expert_episodes, snapshot_counts) -> None:
    error = refused(replace(GOOD, min_score=1.0), snapshot_counts)
    assert error.extra["field"] == "episodes"
    assert "No stored episodes" in error.message
    other = Scenario.objects.exclude(name="easy_negotiation").first().name
    assert refused(replace(GOOD, scenarios=[other]), snapshot_counts).extra["field"] == "episodes"


def test_a_name_taken_by_a_run_or_a_policy(expert_episodes, snapshot_counts) -> None:
    error = refused(replace(GOOD, name="expert"), snapshot_counts)
    assert isinstance(error, Conflict) and error.extra["field"] == "name"
    assert "policy" in error.message
    training_create(request=GOOD, enqueue=False)
    before = snapshot_counts()
    with pytest.raises(Conflict, match="training run is called 'sft-one'"):
        training_create(request=GOOD, enqueue=False)
    assert snapshot_counts() == before and TrainingRun.objects.count() == 1


def test_unknown_base(expert_episodes, snapshot_counts) -> None:
    assert refused(replace(GOOD, base="gpt-9"), snapshot_counts).extra["field"] == "base"
    # a rule policy is no model to start from
    assert refused(replace(GOOD, base="expert"), snapshot_counts).extra["field"] == "base"


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"kind": "dpo"}, "kind"),
        ({"name": "has space"}, "name"),
        ({"episodes": 0}, "episodes"),
        ({"max_steps": 0}, "max_steps"),
        ({"min_score": 1.5}, "min_score"),
        ({"learning_rate": 0.0}, "learning_rate"),
        ({"source_policy": "nobody"}, "source_policy"),
        ({"kind": "grpo", "continuation": "human"}, "continuation"),
        ({"continuation": "model"}, "continuation"),  # an sft run samples no replies
    ],
)
def test_other_bad_values(expert_episodes, snapshot_counts, change, field) -> None:
    assert refused(replace(GOOD, **change), snapshot_counts).extra["field"] == field


def test_the_continuations_offered_are_the_trainers() -> None:
    from typing import get_args

    from negotiation.training.contract import Continuation
    from procurement.models import GrpoContinuation

    assert set(GrpoContinuation.values) == set(get_args(Continuation))


def test_a_trained_policy_is_a_base(expert_episodes, tmp_path) -> None:
    policy_create(name="tiny", policy="llm", backend="transformers", model=str(tmp_path))
    run = training_create(request=replace(GOOD, base="tiny"), enqueue=False)
    assert run.base_model == str(tmp_path)


def test_cancel_then_cancel_again(expert_episodes) -> None:
    run = training_create(request=GOOD, enqueue=False)
    assert training_cancel(run=run).status == "cancelled"
    with pytest.raises(Conflict):
        training_cancel(run=run)
    assert not PolicyConfig.objects.filter(name="sft-one").exists()


def test_a_stalled_run_is_claimed_once_for_resumption(expert_episodes) -> None:
    run = training_create(request=GOOD, enqueue=False)
    grace = {"queued_grace_s": 10.0, "stall_s": 120.0}
    assert recover_trainings(live=set(), **grace) == []  # just created: its task is coming
    long_ago = timezone.now() - timedelta(hours=1)
    TrainingRun.objects.filter(pk=run.pk).update(status="running", heartbeat_at=long_ago)
    assert recover_trainings(live={("training", run.pk)}, **grace) == []  # a worker has it
    assert recover_trainings(live=set(), **grace) == [run.pk]
    assert recover_trainings(live=set(), **grace) == []  # claimed: a full stall window
    run.refresh_from_db()
    assert run.status == "queued"  # for the task sent again to take


def test_a_run_another_process_trains_is_left_alone(expert_episodes) -> None:
    """A second delivery of the task (Celery's visibility timeout, a retry) while the
    first trainer beats does nothing; once the beat is old, the run is taken over."""
    run = training_create(request=GOOD, enqueue=False)
    TrainingRun.objects.filter(pk=run.pk).update(status="running", heartbeat_at=timezone.now())
    assert training_execute(run_id=run.pk).status == "running"
    run.refresh_from_db()
    assert run.log_tail == ""  # nothing ran


def test_a_failed_training_stores_its_error_and_registers_nothing(
    expert_episodes, monkeypatch
) -> None:
    from negotiation.training import TrainingError
    from procurement.services import training

    def refuse(job, hooks):
        raise TrainingError("no config.json in /nowhere")

    monkeypatch.setattr(training, "_job", lambda run: None)
    monkeypatch.setattr(training, "run_training", refuse)
    run = training_execute(run_id=training_create(request=GOOD, enqueue=False).pk)
    run.refresh_from_db()
    assert run.status == "failed" and "no config.json" in run.error
    assert "failed: TrainingError" in run.log_tail and run.finished_at is not None
    assert run.policy is None and not PolicyConfig.objects.filter(name="sft-one").exists()


def test_a_lost_database_queues_the_run_again_for_the_retry(expert_episodes, monkeypatch) -> None:
    from django.db import OperationalError

    from procurement.services import training

    def lose(job, hooks):
        raise OperationalError("server closed the connection unexpectedly")

    monkeypatch.setattr(training, "_job", lambda run: None)
    monkeypatch.setattr(training, "run_training", lose)
    run = training_create(request=GOOD, enqueue=False)
    with pytest.raises(OperationalError):  # the task's autoretry takes it from here
        training_execute(run_id=run.pk)
    run.refresh_from_db()
    assert run.status == "queued" and run.error == ""


def _trained(monkeypatch, tmp_path, vllm: bool):
    """training_execute with the trainer replaced by one that writes nothing and returns
    a finished model folder (training itself is test_train_command's), and vLLM
    installed or not in this interpreter."""
    from negotiation.llm import vllm_backend
    from negotiation.training.contract import TrainOutcome
    from procurement.services import training

    outcome = TrainOutcome(tmp_path, steps=2, metrics={"loss": 1.5}, lineage={"steps": 2})
    monkeypatch.setattr(training, "_job", lambda run: None)
    monkeypatch.setattr(training, "run_training", lambda job, hooks: outcome)
    monkeypatch.setattr(vllm_backend, "installed", lambda: vllm)
    run = training_execute(run_id=training_create(request=GOOD, enqueue=False).pk)
    run.refresh_from_db()
    return run


def test_where_vllm_is_installed_the_model_is_also_a_vllm_policy(
    expert_episodes, monkeypatch, tmp_path
) -> None:
    run = _trained(monkeypatch, tmp_path, vllm=True)
    assert run.status == "finished" and run.policy.name == "sft-one"
    twin = PolicyConfig.objects.get(name="sft-one-vllm")
    assert (twin.policy, twin.backend, twin.model) == ("llm", "vllm", str(tmp_path))
    assert twin.params == run.policy.params and run.policy.backend == "transformers"
    assert run.lineage["policies"] == ["sft-one", "sft-one-vllm"]
    assert "also registered as policy 'sft-one-vllm' (backend vllm)" in run.log_tail


def test_without_vllm_or_with_its_name_taken_only_the_transformers_policy(
    expert_episodes, monkeypatch, tmp_path
) -> None:
    run = _trained(monkeypatch, tmp_path, vllm=False)
    assert run.lineage["policies"] == ["sft-one"]
    assert list(PolicyConfig.objects.filter(name__startswith="sft-one")) == [run.policy]
    TrainingRun.objects.all().delete()
    PolicyConfig.objects.filter(name="sft-one").delete()
    policy_create(name="sft-one-vllm", policy="expert")  # someone else's policy
    run = _trained(monkeypatch, tmp_path, vllm=True)
    assert run.status == "finished" and run.lineage["policies"] == ["sft-one"]
    assert PolicyConfig.objects.get(name="sft-one-vllm").policy == "expert"  # untouched
    assert "no vllm policy: the name 'sft-one-vllm' is taken" in run.log_tail
