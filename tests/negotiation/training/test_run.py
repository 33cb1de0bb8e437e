"""run_training on a tiny local model: SFT, GRPO on top, resume, cancel, LoRA, bad jobs.

Every trained folder must be what the product registers: a plain folder the
transformers backend plays a whole episode with, as an ``llm`` policy."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from negotiation.policies import get_policy
from negotiation.runner import run_episode
from negotiation.training import (
    LINEAGE_FILE,
    EpisodeSource,
    TrainHooks,
    TrainingError,
    TrainJob,
    chat_examples,
    run_training,
)
from tests.llm_models import build_tiny_model

pytest.importorskip("trl")
CHARS = 3_000  # a short chat budget keeps the tiny model's sequences short


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("base") / "llama"
    return build_tiny_model(folder, arch="llama", max_positions=8192)


@pytest.fixture(scope="module")
def examples() -> list[dict]:
    played = [run_episode("bilateral", "expert", seed=s) for s in (0, 1)]
    sources = [EpisodeSource("bilateral", r.seed, [s.action for s in r.steps]) for r in played]
    return chat_examples(sources, max_prompt_chars=CHARS)


def sft_job(base: Path, out: Path, examples: list[dict], **kw) -> TrainJob:
    settings = {"max_steps": 2, "device": "cpu", "max_prompt_chars": CHARS, **kw}
    return TrainJob("sft", base, out, examples=examples, **settings)


def grpo_job(base: Path, out: Path, **kw) -> TrainJob:
    settings = {"max_steps": 2, "device": "cpu", "max_prompt_chars": CHARS, **kw}
    return TrainJob(
        "grpo",
        base,
        out,
        rows=[("bilateral", 7)],
        num_generations=2,
        max_completion_tokens=24,
        **settings,
    )


def play(model_dir: Path) -> None:
    """One whole episode with the folder as the product's ``llm`` policy."""
    policy = get_policy(
        "llm", seed=99, backend="transformers", model=str(model_dir), max_prompt_chars=CHARS
    )
    episode = run_episode("bilateral", policy, seed=99)
    assert episode.steps and policy.stats["llm_calls"] > 0
    assert policy.stats["llm_errors"] == 0  # the backend loaded it and generated


def test_sft_then_grpo_give_playable_folders(base: Path, examples: list, tmp_path: Path) -> None:
    logged: list[tuple[int, dict]] = []
    sft = run_training(
        sft_job(base, tmp_path / "sft", examples),
        TrainHooks(on_log=lambda s, m: logged.append((s, m))),
    )
    assert sft.steps == 2 and not sft.cancelled
    assert [s for s, _ in logged] == [1, 2] and all("loss" in m for _, m in logged)
    lineage = json.loads((sft.model_dir / LINEAGE_FILE).read_text())
    assert lineage["kind"] == "sft" and lineage["data"]["examples"] == len(examples)
    assert lineage["policy_params"]["model"] == str(sft.model_dir)
    play(sft.model_dir)

    grpo = run_training(grpo_job(sft.model_dir, tmp_path / "grpo", scale_rewards="none"))
    assert grpo.steps == 2 and "reward" in grpo.metrics
    assert grpo.lineage["base_model"] == str(sft.model_dir)
    assert grpo.lineage["data"] == {"scenarios": ["bilateral"], "seeds": [7], "rows": 1}
    # the advantage scaling reached TRL: what the trainer ran with, as it saved it
    import torch

    ran = torch.load(tmp_path / "grpo" / "checkpoint-2" / "training_args.bin", weights_only=False)
    assert ran.scale_rewards == grpo.lineage["scale_rewards"] == "none"
    # one reply per pass (memory of one chat), the group accumulated into one step
    assert (ran.per_device_train_batch_size, ran.gradient_accumulation_steps) == (1, 2)
    play(grpo.model_dir)


def test_the_model_continuation_scores_the_models_own_play(base: Path, tmp_path: Path) -> None:
    """GRPO's reward with ``continuation="model"``: after the reply, the model being
    trained plays the rest as the ``llm`` policy plays it; a 2-step run records it."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from negotiation.training.examples import action_reply
    from negotiation.training.grpo import ModelContinuation, decision_points, expert_sources

    source = expert_sources([("bilateral", 7)])[0]
    point = next(p for p in decision_points([source], CHARS, seed=0) if p["prefix"] == "[]")
    reward = ModelContinuation(CHARS)
    reward.bind(AutoModelForCausalLM.from_pretrained(base), AutoTokenizer.from_pretrained(base))
    replies = [action_reply(source.actions[0]), "no action"]
    columns = {k: [point[k]] * 2 for k in ("prompt", "scenario", "seed", "prefix")}
    got = reward(columns.pop("prompt"), replies, **columns)
    policy = get_policy("llm", backend="transformers", model=str(base), max_prompt_chars=CHARS)
    alone = run_episode("bilateral", policy, 7, actions_prefix=[source.actions[0]])
    assert policy.stats["llm_calls"] > 0  # the model played the rest
    assert got == [alone.score, 0.0]

    grpo = run_training(grpo_job(base, tmp_path / "grpo", continuation="model"))
    assert grpo.steps == 2 and grpo.lineage["continuation"] == "model"
    assert "rewards/reward_model_continuation/mean" in grpo.history[-1]


def test_resume_and_cancel(base: Path, examples: list, tmp_path: Path) -> None:
    out = tmp_path / "run"
    checkpoints: list[Path] = []
    first = run_training(
        sft_job(base, out, examples, max_steps=3),
        TrainHooks(should_stop=lambda: True, on_checkpoint=checkpoints.append),
    )
    assert first.cancelled and first.steps == 1  # stopped after its first step
    assert checkpoints == [out / "checkpoint-1"] and (first.model_dir / "config.json").is_file()

    again = run_training(sft_job(base, out, examples, max_steps=3))
    assert again.lineage["resumed_from"] == str(out / "checkpoint-1")
    assert again.steps == 3 and not again.cancelled
    # its history starts at step 1, before the resume: the curves of the whole run
    assert [e["step"] for e in again.history if "loss" in e] == [1.0, 2.0, 3.0]


def test_lora_is_merged_into_a_plain_folder(base: Path, examples: list, tmp_path: Path) -> None:
    outcome = run_training(sft_job(base, tmp_path / "lora", examples, lora=True, lora_r=4))
    files = {p.name for p in outcome.model_dir.iterdir()}
    assert "model.safetensors" in files and "adapter_config.json" not in files
    assert outcome.lineage["lora"] is True
    play(outcome.model_dir)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"examples": []}, "no episode matched"),
        ({"kind": "dpo"}, "kind must be"),
        ({"max_steps": 0}, "must be > 0"),
        ({"base_model": Path("/nonexistent")}, "not a Hugging Face model folder"),
        ({"eval_every": -1}, "eval_every must be"),
        ({"kind": "grpo", "rows": [("bilateral", 1)], "eval_examples": [{}]}, "are for sft"),
        ({"kind": "grpo"}, "rows or episodes"),
        ({"kind": "grpo", "rows": [("bilateral", 1)], "scale_rewards": "std"}, "scale_rewards"),
        ({"kind": "grpo", "rows": [("bilateral", 1)], "continuation": "human"}, "continuation"),
    ],
)
def test_bad_jobs_write_nothing(
    base: Path, examples: list, tmp_path: Path, change: dict, message: str
) -> None:
    job = sft_job(base, tmp_path / "out", examples)
    for key, value in change.items():
        setattr(job, key, value)
    with pytest.raises(TrainingError, match=message):
        run_training(job)
    assert not (tmp_path / "out").exists()
