"""The whole training loop through the product on a tiny local model (no download):
stored expert episodes -> SFT 2 steps -> GRPO 2 steps on top (in those episodes' states,
the model playing each reply's episode to its end) -> registered ``llm``
policies -> one episode played by the trained model, every step through the gpu-queue
task path (the embedded runner's model lane)."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.test import override_settings

from procurement.models import EpisodeStatus, TrainingRun
from procurement.services.datasets import dataset_export
from procurement.services.episodes import episode_create
from procurement.services.policies import policy_create
from procurement.services.sweeps import sweep_create
from procurement.services.training import TrainingRequest, training_create
from tests.llm_models import build_tiny_model
from tests.workers.helpers import assert_contiguous_decisions, seeded

pytest.importorskip("trl")
PLAY = {"max_prompt_chars": 3000, "max_tokens": 24}  # short chats for a tiny context


def _train(runner, **request) -> TrainingRun:
    gpu = runner.lanes["gpu"]
    done = gpu.completed
    run = training_create(request=TrainingRequest(episodes=2, max_steps=2, **request))
    assert runner.join(timeout=900)
    assert gpu.completed == done + 1  # trained in the model lane, as a gpu-queue task
    run.refresh_from_db()
    assert run.status == "finished", run.error
    assert run.step == 2 and [p["step"] for p in run.metrics] == [1, 2]
    assert run.policy is not None and run.policy.name == run.name
    assert run.policy.model == str(Path(run.output_dir) / "model")
    assert run.policy.params == PLAY  # plays with the prompt budget it was trained with
    assert run.lineage["steps"] == 2 and run.lineage["base"] == request["base"]
    assert "started:" in run.log_tail and "registered as policy" in run.log_tail
    return run


@pytest.mark.django_db(transaction=True)
@pytest.mark.timeout(1800)
@override_settings(TASK_RUNNER="thread")
def test_export_sft_grpo_policy_episode(tmp_path: Path, settings) -> None:
    from workers.inprocess import get_runner

    settings.DATA_DIR = tmp_path
    runner = get_runner()
    scenarios, policies = seeded()
    base = build_tiny_model(tmp_path / "tiny", arch="llama", max_positions=8192)
    policy_create(name="tiny", policy="llm", backend="transformers", model=str(base), params=PLAY)
    sweep_create(scenarios=[scenarios["bilateral"]], policies=[policies["expert"]], seeds=2)
    assert runner.join(timeout=300)
    export = dataset_export(scenarios=["bilateral"], policies=["expert"])
    assert sum(1 for _ in export.lines()) > 0 and export.episodes == 2

    sft = _train(runner, kind="sft", base="tiny", scenarios=["bilateral"], name="tiny-sft")
    assert all("loss" in p and "learning_rate" in p for p in sft.metrics)
    assert sorted(sft.source_episode_ids) == sorted(e for e in _expert_episode_ids())
    # GRPO in the stored episodes' own states, each reply's episode finished by the model
    grpo = _train(
        runner,
        kind="grpo",
        base="tiny-sft",
        scenarios=["bilateral"],
        name="tiny-grpo",
        continuation="model",
    )
    assert all("reward" in p for p in grpo.metrics)
    assert grpo.lineage["continuation"] == "model"
    assert grpo.lineage["data"]["state_episodes"] == 2 and grpo.lineage["data"]["rows"] == 0
    assert grpo.lineage["base_lineage"] == sft.lineage  # the chain back to the shipped base
    assert grpo.base_model == sft.policy.model

    episode = episode_create(scenario=scenarios["bilateral"], policy=grpo.policy, seed=5)
    assert episode.queue == "gpu"
    assert runner.join(timeout=600)
    episode.refresh_from_db()
    assert episode.status == EpisodeStatus.FINISHED, episode.error
    assert_contiguous_decisions(episode)
    assert episode.decisions.filter(actor__in=["llm", "fallback:expert"]).exists()


def _expert_episode_ids() -> list[int]:
    from procurement.models import Episode

    return list(Episode.objects.filter(policy_name="expert").values_list("pk", flat=True))
