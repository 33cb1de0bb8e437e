"""ProcurementToolEnv, the TRL environment: whole episodes through its tools equal the plain
engine's, bad input gets the engine's (or the session's) error, pooled instances reset
fully, and a real GRPOTrainer trains with it on a tiny local model."""

from __future__ import annotations

import inspect
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from negotiation.actions import ACTION_TYPES, FIELDS
from negotiation.interfaces.session import SessionError, TrainingSession
from negotiation.interfaces.trl_env import ProcurementToolEnv, dataset_rows
from negotiation.policies import get_policy

OVER = "The episode is over"


def tool_names(env: ProcurementToolEnv) -> set[str]:
    """The tools TRL would expose: the class's public functions but reset/get_reward
    (the same inspection GRPOTrainer does)."""
    return {
        name
        for name, _ in inspect.getmembers(type(env), predicate=inspect.isfunction)
        if name not in ("reset", "get_reward") and not name.startswith("_")
    }


def expert_run(row: dict[str, Any]) -> tuple[list[dict[str, Any]], float]:
    """The expert's actions and final score on the plain engine (through the session)."""
    session = TrainingSession()
    obs = session.reset(**row)
    policy = get_policy("expert", seed=row["seed"])
    policy.reset(row["seed"])
    actions = []
    while not session.env.done:
        action = policy.act(obs)
        actions.append(action)
        obs = session.step(action).observation
    return actions, session.score()


def play(env: ProcurementToolEnv, actions: list[dict[str, Any]]) -> list[str]:
    """Each engine action as the tool call a model would make."""
    texts = []
    for a in actions:
        kwargs = {k: v for k, v in a.items() if k not in ("action_type", "rationale")}
        texts.append(getattr(env, a["action_type"])(**kwargs))
    return texts


def plain_score(row: dict[str, Any], actions: list[dict[str, Any]]) -> float:
    session = TrainingSession()
    session.reset(**row)
    for a in actions:
        if session.env.done:
            break
        session.step(a)
    while not session.env.done:
        session.step({"action_type": "defer"})
    return session.score()


ROWS = [
    {"scenario": "easy_negotiation", "seed": 3},
    {"scenario": "medium_adversarial", "seed": 11},
    {"scenario": "bilateral_hardball", "seed": 5},
    {"scenario": "easy_negotiation", "seed": 4, "tier": "master"},
]


# ----------------------------------------------------------------------------- contract
def test_tools_are_exactly_the_seven_actions_with_the_engines_fields():
    from transformers.utils import get_json_schema

    env = ProcurementToolEnv()
    assert tool_names(env) == set(ACTION_TYPES)
    for name in ACTION_TYPES:
        method = getattr(env, name)
        params = inspect.signature(method).parameters
        required, optional = FIELDS[name]
        assert set(params) == required | optional, name
        for p in params.values():
            assert (p.default is inspect.Parameter.empty) == (p.name in required), (name, p)
        # what GRPOTrainer renders into the prompt: every argument typed and described
        schema = get_json_schema(method)["function"]
        assert set(schema["parameters"]["properties"]) == required | optional
        assert set(schema["parameters"].get("required", [])) == required
        assert all(p["description"] for p in schema["parameters"]["properties"].values())


def test_importing_the_environment_loads_neither_trl_nor_torch_nor_django():
    code = (
        "import sys, negotiation.interfaces.trl_env; "
        "print([m for m in ('trl', 'torch', 'transformers', 'django') if m in sys.modules])"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
        cwd=Path(__file__).resolve().parents[3],
    )
    assert out.stdout.strip() == "[]"


def test_first_prompt_has_rules_state_and_asks_for_a_tool_call_not_json():
    text = ProcurementToolEnv().reset(scenario="easy_negotiation", seed=1)
    assert "Rules:" in text and "award_contract buys" in text
    assert "Week 0" in text and "Requirements:" in text and "Suppliers:" in text
    assert text.endswith("Your next action: call one tool.")
    assert "JSON" not in text


def test_dataset_rows_reset_an_instance():
    rows = dataset_rows(range(2), scenario="bilateral", tier="novice")
    assert [r["seed"] for r in rows] == [0, 1]
    assert rows[0]["prompt"][-1] == {"role": "user", "content": ""}
    env = ProcurementToolEnv()
    env.reset(**rows[1])
    assert env.episode["scenario"] == "bilateral" and env.episode["seed"] == 1
    assert env.episode["tier"] == "novice"


# ----------------------------------------------------------------------------- episodes
@pytest.mark.parametrize("row", ROWS, ids=lambda r: f"{r['scenario']}-{r['seed']}")
def test_expert_episode_through_tools_scores_as_the_plain_engine(row):
    actions, score = expert_run(row)
    env = ProcurementToolEnv()
    env.reset(**row)
    texts = play(env, actions)
    assert OVER in texts[-1] and all(OVER not in t for t in texts[:-1])
    assert env.episode["step"] == len(actions)
    assert env.get_reward() == pytest.approx(score, abs=1e-12)
    if "tier" in row:
        assert env.episode["tier"] == row["tier"]


def test_invalid_tool_arguments_get_the_engines_error_and_the_episode_goes_on():
    row = {"scenario": "easy_negotiation", "seed": 3}
    env = ProcurementToolEnv()
    env.reset(**row)
    bad = [
        {"action_type": "negotiate", "supplier_id": "S99", "requirement_id": "R01", "price": 9.0},
        {"action_type": "negotiate", "supplier_id": "S01", "requirement_id": "R03", "price": "9"},
        {"action_type": "award_contract", "supplier_id": "S01", "requirement_id": "R03",
         "quantity": 0},
        {"action_type": "hedge", "requirement_id": "R01", "supplier_id": "S02",
         "hedge_supplier_id": "S02", "split": 0.5},
    ]  # fmt: skip
    texts = play(env, bad)
    session = TrainingSession()
    session.reset(**row)
    for action, text in zip(bad, texts, strict=True):
        error = session.step(action).info["error"]
        assert f"INVALID ({error['code']}): {error['message']}" in text
        assert "Your next action: call one tool." in text  # the episode goes on
    assert env.episode["step"] == len(bad)
    # a valid action still works, and the invalid ones cost what the engine charges
    more = [
        {"action_type": "negotiate", "supplier_id": "S01", "requirement_id": "R03", "price": 40.0}
    ]
    assert "S01 on R03:" in play(env, more)[0]
    assert env.get_reward() == pytest.approx(plain_score(row, bad + more), abs=1e-12)


def test_calls_after_the_end_say_so_and_change_nothing():
    env = ProcurementToolEnv()
    assert "reset() first" in env.defer()
    with pytest.raises(RuntimeError, match="before reset"):
        env.get_reward()
    env.reset(scenario="bilateral", seed=2)
    actions, score = expert_run({"scenario": "bilateral", "seed": 2})
    play(env, actions)
    assert OVER in env.defer()
    assert OVER in env.negotiate("S01", "R01", 1.0)
    assert env.get_reward() == pytest.approx(score, abs=1e-12)
    assert env.episode["step"] == len(actions)  # nothing was stepped after the end


def test_get_reward_plays_an_unfinished_episode_out_with_defers():
    row = {"scenario": "easy_negotiation", "seed": 7}
    actions, _ = expert_run(row)
    env = ProcurementToolEnv()
    env.reset(**row)
    play(env, actions[:5])  # the model stopped early
    reward = env.get_reward()
    assert reward == pytest.approx(plain_score(row, actions[:5]), abs=1e-12)
    assert env.get_reward() == reward  # idempotent: the episode is over now
    assert OVER in env.defer()


# ----------------------------------------------------------------------------- pooling
def test_a_reused_instance_matches_fresh_instances():
    """TRL pools instances: a reused one must give exactly what a fresh one gives, even
    after an episode abandoned half-way."""
    runs = [(row, expert_run(row)[0]) for row in ROWS]
    reused = ProcurementToolEnv()
    reused.reset(scenario="hard_arena", seed=99)
    reused.defer()  # abandoned mid-episode
    for row, actions in runs + runs[::-1]:
        fresh = ProcurementToolEnv()
        first = (reused.reset(**row), fresh.reset(**row))
        assert first[0] == first[1]
        assert play(reused, actions) == play(fresh, actions)
        assert reused.get_reward() == fresh.get_reward()


def test_tier_row_changes_the_world_and_auto_curriculum_follows_the_agent():
    env = ProcurementToolEnv()
    base = env.reset(scenario="medium_adversarial", seed=1)
    assert env.reset(scenario="medium_adversarial", seed=1, tier="master") != base
    row = {"scenario": "easy_negotiation", "seed": 1, "curriculum": "auto"}
    for episode in range(3):
        env.reset(**{**row, "seed": episode})
        progress = env.episode["curriculum"]
        assert progress["tier"] == "novice"
        assert progress["episodes_in_window"] == episode  # each finished episode counted
        env.get_reward()  # finishes the episode, so the next reset records its score
    # without "auto" the curriculum is dropped again
    env.reset(scenario="easy_negotiation", seed=0)
    assert "curriculum" not in env.episode and env.episode["tier"] is None


@pytest.mark.parametrize(
    ("row", "message"),
    [
        ({"scenario": "nowhere", "seed": 1}, "Unknown scenario 'nowhere'"),
        ({"scenario": "bilateral", "seed": 1, "tier": "guru"}, "Unknown tier 'guru'"),
        ({"scenario": "bilateral", "seed": 1, "curriculum": "yes"}, "Unknown curriculum"),
        ({"scenario": "bilateral", "seed": -1}, "seed must be a whole number from 0"),
        ({"scenario": "bilateral", "seed": "3"}, "seed must be a whole number from 0"),
        ({"scenario": "bilateral", "seed": 1, "senario": "x"}, "Unknown dataset column"),
    ],
)
def test_a_bad_row_gets_a_clear_error_and_changes_nothing(row, message):
    env = ProcurementToolEnv()
    env.reset(scenario="easy_negotiation", seed=3)
    env.defer()
    before = env.episode
    with pytest.raises(SessionError, match=message):
        env.reset(**row)
    assert env.episode == before
    assert "Week 1 closed" in env.defer()  # the running episode is still usable


@pytest.mark.parametrize("kwargs", [{"max_prompt_chars": 10}, {"max_result_chars": "2000"}])
def test_bad_text_budgets_are_refused(kwargs):
    with pytest.raises(ValueError, match=next(iter(kwargs))):
        ProcurementToolEnv(**kwargs)


# ----------------------------------------------------------------------------- real TRL
DEFER_CALL = '<tool_call>\n{"name": "defer", "arguments": {}}\n</tool_call>'


def build_defer_model(folder: Path) -> Path:
    """A tiny Llama whose every reply is one ``defer`` tool call in Qwen's format.

    Its attention and MLP outputs are zero, so each next token depends on the current token
    only, and two hand-set rows make the chain "assistant header -> the tool call (one
    added token) -> <|im_end|>". A random tiny model never writes a parseable tool call,
    so without this the tool loop of GRPOTrainer would go untested. The tokenizer is a
    byte-level BPE trained on the environment's own prompts, with TRL's Qwen2.5 chat
    template, which renders tools and tool calls and which TRL knows how to parse.
    """
    import torch
    from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast
    from trl.chat_template_utils import qwen2_5_chat_template

    env = ProcurementToolEnv()
    corpus = [env.reset(scenario="easy_negotiation", seed=s) for s in range(3)]
    corpus += [env.defer() for _ in range(3)]
    special = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
    bpe = Tokenizer(models.BPE())
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    bpe.train_from_iterator(
        corpus,
        trainer=trainers.BpeTrainer(
            vocab_size=1000,
            special_tokens=special,
            initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        ),
    )
    tok = PreTrainedTokenizerFast(
        tokenizer_object=bpe,
        bos_token="<|im_start|>",
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
        unk_token="<|endoftext|>",
    )
    tok.add_tokens([AddedToken(DEFER_CALL, normalized=False)])
    tok.chat_template = qwen2_5_chat_template
    call = tok.convert_tokens_to_ids(DEFER_CALL)
    eos = tok.eos_token_id
    header = tok.apply_chat_template(
        [{"role": "user", "content": "x"}], add_generation_prompt=True, tokenize=False
    )
    last = tok(header)["input_ids"][-1]  # the token after which the model answers
    config = LlamaConfig(
        vocab_size=len(tok),
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=1,
        num_attention_heads=2,
        num_key_value_heads=2,
        max_position_embeddings=32768,  # rope: long prompts cost nothing in weights
        tie_word_embeddings=False,
        bos_token_id=tok.bos_token_id,
        eos_token_id=eos,
        pad_token_id=tok.pad_token_id,
    )
    torch.manual_seed(0)
    model = LlamaForCausalLM(config)
    with torch.no_grad():
        for layer in model.model.layers:
            layer.self_attn.o_proj.weight.zero_()
            layer.mlp.down_proj.weight.zero_()
        emb, head = model.model.embed_tokens.weight, model.lm_head.weight
        emb.normal_(0.0, 0.02)
        head.normal_(0.0, 0.02)
        for row, col in ((last, 0), (call, 1)):
            emb[row].zero_()
            emb[row, col] = 1.0
        for row, col in ((call, 0), (eos, 1)):
            head[row].zero_()
            head[row, col] = 10.0
    model.save_pretrained(folder)
    tok.save_pretrained(folder)
    return folder


def test_grpo_trainer_trains_with_the_environment(tmp_path, monkeypatch):
    pytest.importorskip("trl")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("TRL_EXPERIMENTAL_SILENCE", "1")
    from datasets import Dataset
    from trl import GRPOConfig, GRPOTrainer

    resets: list[dict[str, Any]] = []
    seen: list[Any] = []

    class RecordingEnv(ProcurementToolEnv):
        def reset(self, **row: Any) -> str:
            resets.append(row)
            return super().reset(**row)

    def completions_seen(completions: list, **kwargs: Any) -> list[float]:
        seen.extend(completions)
        return [0.0] * len(completions)

    folder = build_defer_model(tmp_path / "model")
    seeds = [1, 2]
    trainer = GRPOTrainer(
        model=str(folder),
        reward_funcs=completions_seen,
        environment_factory=lambda: RecordingEnv(max_result_chars=1200),
        train_dataset=Dataset.from_list(dataset_rows(seeds, scenario="easy_negotiation")),
        args=GRPOConfig(
            output_dir=str(tmp_path / "out"),
            max_steps=2,
            per_device_train_batch_size=2,
            num_generations=2,
            max_completion_length=4096,
            max_tool_calling_iterations=6,
            learning_rate=1e-6,
            use_cpu=True,
            bf16=False,
            report_to="none",
            logging_steps=1,
            save_strategy="no",
            shuffle_dataset=False,
        ),
    )
    assert {tool.__name__ for tool in trainer.tools} == set(ACTION_TYPES)
    trainer.train()

    logs = [h for h in trainer.state.log_history if "loss" in h]
    assert len(logs) == 2 and all(h["loss"] == pytest.approx(0.0, abs=1e-6) for h in logs)
    # easy_negotiation has 4 weeks: 4 defers end it, then 2 calls are told it is over
    assert all(h["tools/call_frequency"] == 6 and h["tools/failure_frequency"] == 0 for h in logs)
    # each row reset one pooled instance per generation, with the whole row
    assert sorted(r["seed"] for r in resets) == sorted(seeds * 2)
    assert all(r["scenario"] == "easy_negotiation" and "prompt" in r for r in resets)
    # the rollouts read the engine's answers, and get_reward scored the plain engine's
    # defer-only episode
    tool_texts = [m["content"] for c in seen for m in c if m["role"] == "tool"]
    assert "Done. Week 0 closed; now week 1." in tool_texts[0]
    assert sum(OVER in t for t in tool_texts) == 4 * 3  # 4 rollouts x (end + 2 more calls)
    for h, seed in zip(logs, seeds, strict=True):  # one seed per step, unshuffled
        expected = plain_score({"scenario": "easy_negotiation", "seed": seed}, [])
        assert h["rewards/RecordingEnv/mean"] == pytest.approx(expected)
    assert os.path.isdir(tmp_path / "out")
