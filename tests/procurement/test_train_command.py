"""``manage.py train`` on a tiny local model: trains in process, registers the policy,
and a run cancelled mid-way resumes from its checkpoint when rerun with its name."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from django.core.management import call_command

from procurement.models import PolicyConfig, TrainingRun
from procurement.services import training
from procurement.services.policies import policy_create
from procurement.services.sweep_runner import sweep_cells_run, sweep_start
from procurement.services.sweeps import sweep_create
from tests.llm_models import build_tiny_model
from tests.vllm_child import run_vllm_script
from tests.workers.helpers import seeded

pytestmark = pytest.mark.django_db
pytest.importorskip("trl")

EPISODE = Path(__file__).parents[1] / "negotiation" / "llm" / "vllm_episode.py"
ARGS = ["train", "sft", "--base", "tiny", "--scenarios", "bilateral", "--episodes", "2"]


@pytest.fixture
def world(tmp_path: Path, settings) -> None:
    settings.DATA_DIR = tmp_path
    scenarios, policies = seeded()
    base = build_tiny_model(tmp_path / "tiny", arch="llama", max_positions=8192)
    params = {"max_prompt_chars": 3000, "max_tokens": 24}
    policy_create(name="tiny", policy="llm", backend="transformers", model=str(base), params=params)
    sweep = sweep_create(
        scenarios=[scenarios["bilateral"]], policies=[policies["expert"]], seeds=2, enqueue=False
    )
    for chunk in sweep_start(sweep_id=sweep.pk):
        sweep_cells_run(sweep_id=sweep.pk, cell_ids=chunk.cell_ids)


def _train(*args: str) -> str:
    out, err = io.StringIO(), io.StringIO()
    call_command(*ARGS, *args, stdout=out, stderr=err)
    return out.getvalue() + err.getvalue()


def test_cancelled_mid_way_then_resumed_by_name(world, monkeypatch) -> None:
    monkeypatch.setattr(training, "STOP_POLL_S", 0.0)
    cancel_after_first_step = training._RunHooks.on_log

    def on_log(self, step, metrics):
        cancel_after_first_step(self, step, metrics)
        TrainingRun.objects.filter(pk=self.run.pk).update(status="cancelled")

    monkeypatch.setattr(training._RunHooks, "on_log", on_log)
    text = _train("--name", "cli-sft", "--max-steps", "4")
    run = TrainingRun.objects.get(name="cli-sft")
    assert "Cancelled at step" in text and run.status == "cancelled" and run.step < 4
    assert not PolicyConfig.objects.filter(name="cli-sft").exists()
    stopped_at = run.step

    monkeypatch.setattr(training._RunHooks, "on_log", cancel_after_first_step)
    text = _train("--name", "cli-sft", "--max-steps", "4")
    run.refresh_from_db()
    assert f"Resuming 'cli-sft' from step {stopped_at}" in text
    assert "Finished 4 steps; policy 'cli-sft'" in text and "4/4" in text  # the bar
    assert run.status == "finished" and run.policy.name == "cli-sft"
    assert run.lineage["resumed_from"]  # the checkpoint it continued from
    # the steps before the cancel are not done twice
    assert [p["step"] for p in run.metrics] == [1, 2, 3, 4][: len(run.metrics)]
    assert run.metrics[-1]["step"] == 4


@pytest.mark.slow  # an engine start in .venv-vllm (about 40 s on two cores)
def test_the_trained_folder_plays_an_episode_on_vllm(world, tmp_path) -> None:
    """What ``-vllm`` policies rest on (services.training registers one where the trainer
    can import vLLM): the folder a run writes is one vLLM's engine serves, and the ``llm``
    buyer plays a whole episode on it with schema-constrained replies."""
    _train("--name", "for-vllm", "--max-steps", "1")
    folder = TrainingRun.objects.get(name="for-vllm").policy.model
    played = run_vllm_script(EPISODE, folder, out=tmp_path / "episode.json")
    metrics = played["metrics"]
    assert played["backend"] == "vllm" and metrics["buyer_llm_calls"] >= 1
    # every decision was the model's own, and an action the engine took
    assert metrics["buyer_llm_fallbacks"] == 0 and metrics["invalid_actions"] == 0
