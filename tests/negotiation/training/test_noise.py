"""Noise-injected expert episodes: what is cut, what is replayed, what carries no loss."""

from __future__ import annotations

from pathlib import Path

import pytest

from negotiation.env import ProcurementEnv
from negotiation.policies import get_policy
from negotiation.runner import run_episode
from negotiation.scenarios import load_scenario
from negotiation.training import TrainingError, TrainJob, chat_examples
from negotiation.training.noise import noisy_expert_sources
from negotiation.training.run import _data_summary
from negotiation.training.sft import tokenize_chat
from tests.llm_models import build_tiny_model

ROWS = [("bilateral", s) for s in range(6)]
ARENA = [("easy_negotiation", 0)]


def test_no_noise_is_the_experts_own_play() -> None:
    clean = noisy_expert_sources([*ROWS, *ARENA], rate=0.0)  # GRPO's rows may be arena ones
    played = [run_episode(scenario, "expert", seed=seed) for scenario, seed in [*ROWS, *ARENA]]
    assert [(s.actions, s.score) for s in clean] == [
        ([st.action for st in p.steps], p.score) for p in played
    ]
    assert not any(s.untaught for s in clean)


def test_cut_offers_are_raises_cut_short_and_repeat() -> None:
    noisy = noisy_expert_sources(ROWS, rate=0.5, seed=3)
    assert noisy == noisy_expert_sources(ROWS, rate=0.5, seed=3)  # seeded: the data repeats
    assert sum(len(s.untaught) for s in noisy) >= 6
    for source in noisy:
        env = ProcurementEnv(load_scenario(source.scenario))
        obs = env.reset(seed=source.seed)
        expert = get_policy("expert", seed=source.seed)  # what it answers each state with
        for k, action in enumerate(source.actions):
            wanted = expert.act(obs)
            if k in source.untaught:
                th = obs.threads[(action["supplier_id"], action["requirement_id"])]
                assert action == {**wanted, "price": action["price"]}  # only the price cut
                assert th.rounds[-1].buyer_offer <= action["price"] <= wanted["price"]
            else:  # the expert's own answer to the state the cuts made
                assert action == wanted
            obs = env.step(action).observation
        assert env.done and source.score == env.score().score


@pytest.mark.parametrize("rate", [-0.1, 1.5, float("nan"), True])
def test_a_bad_rate_is_refused(rate: float) -> None:
    with pytest.raises(TrainingError, match="noise rate"):
        noisy_expert_sources(ROWS, rate=rate)


def test_a_world_that_cannot_be_played_is_a_training_error() -> None:
    with pytest.raises(TrainingError, match="cannot play atlantis/0"):
        noisy_expert_sources([("atlantis", 0)], rate=0.3)


def test_untaught_replies_carry_no_loss(tmp_path: Path) -> None:
    source = next(s for s in noisy_expert_sources(ROWS, rate=0.5, seed=3) if s.untaught)
    (chat,) = chat_examples([source])
    replies = [m for m in chat["messages"] if m["role"] == "assistant"]
    assert [k for k, m in enumerate(replies) if m.get("learn") is False] == sorted(source.untaught)

    folder = build_tiny_model(tmp_path / "tiny", arch="llama", max_positions=8192)
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(folder)
    taught = tokenize_chat(tokenizer, chat["messages"])
    plain = [{"role": m["role"], "content": m["content"]} for m in chat["messages"]]
    everything = tokenize_chat(tokenizer, plain)
    assert taught["input_ids"] == everything["input_ids"]  # the text is the one played
    assert 0 < sum(taught["assistant_masks"]) < sum(everything["assistant_masks"])
    untaught_only = [m if m["role"] != "assistant" else {**m, "learn": False} for m in plain]
    with pytest.raises(TrainingError, match="no assistant turn"):
        tokenize_chat(tokenizer, untaught_only)

    job = TrainJob("sft", folder, tmp_path / "out", examples=[chat])
    summary = _data_summary(job)
    assert summary["untaught_turns"] == len(source.untaught)
    assert summary["assistant_turns"] == len(replies) - len(source.untaught)
