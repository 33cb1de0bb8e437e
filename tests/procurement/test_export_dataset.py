"""manage.py export_dataset: chat-format training records from stored, finished episodes.

The episodes are really played (episode_create + the runner), and each record's prompt is
checked against what an LLM buyer in that seat would have read: the same episode played
in process by a policy that renders the LLM buyer's prompt before each decision.
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from negotiation import get_policy, run_episode
from negotiation.policies.action_schema import parse_action
from negotiation.policies.base import Policy
from negotiation.policies.buyer_chat import buyer_messages
from procurement.models import Episode, PolicyConfig, Scenario
from procurement.services.episode_runner import episode_run
from procurement.services.episodes import episode_create
from procurement.services.scenarios import scenario_copy

pytestmark = pytest.mark.django_db

TRL_COLUMNS = {"messages", "prompt", "completion"}
SCALAR_COLUMNS = {"reward", "score", "valid", "actor", "episode_id", "step", "scenario"}
SCALAR_COLUMNS |= {"policy", "seed"}


def play(scenario: str, policy: str, seed: int) -> Episode:
    episode = episode_create(
        scenario=Scenario.objects.get(name=scenario),
        policy=PolicyConfig.objects.get(name=policy),
        seed=seed,
        enqueue=False,
    )
    episode = episode_run(episode_id=episode.pk, live_updates=False)
    assert episode.status == "finished", episode.error
    return episode


@pytest.fixture
def played(seeded) -> list[Episode]:
    """Short episodes of two scenarios and three policies, and one that is not finished."""
    episode_create(
        scenario=Scenario.objects.get(name="easy_negotiation"),
        policy=PolicyConfig.objects.get(name="expert"),
        seed=9,
        enqueue=False,
    )
    return [
        play("easy_negotiation", "expert", 1),
        play("easy_negotiation", "random", 2),
        play("bilateral_cooperative", "greedy_lowball", 3),
        play("bilateral_cooperative", "expert", 4),
    ]


def export(*args: str, **options) -> tuple[str, str]:
    out, err = io.StringIO(), io.StringIO()
    call_command("export_dataset", *args, stdout=out, stderr=err, **options)
    return out.getvalue(), err.getvalue()


def read(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


class PromptRecorder(Policy):
    """Plays a rule policy and keeps the chat an LLM buyer would have read at each step
    (its previous action included, which the prompt shows when the engine refused it)."""

    def __init__(self, policy: str, seed: int) -> None:
        super().__init__(seed)
        self.inner = get_policy(policy, seed=seed)
        self.chats: list[list[dict]] = []
        self.previous = None

    def act(self, obs):
        chat = buyer_messages(obs)
        self.chats.append([{"role": m.role, "content": m.content} for m in chat])
        self.previous = self.inner.act(obs)
        return self.previous


def test_one_record_per_decision_with_the_llm_buyers_prompt_and_the_action(
    played, tmp_path
) -> None:
    path = tmp_path / "train.jsonl"
    out, err = export("--format", "jsonl", "--output", str(path))
    records = read(path)
    assert out == ""
    steps = sum(e.steps for e in played)
    assert f"Exported {steps} records from {len(played)} episodes to {path}." in err
    assert "100%" in err  # the progress bar, on standard error
    assert len(records) == steps
    for episode in played:
        mine = [r for r in records if r["episode_id"] == episode.pk]
        assert [r["step"] for r in mine] == list(range(episode.steps))
        recorder = PromptRecorder(episode.policy_snapshot["policy"], episode.seed)
        replayed = run_episode(episode.scenario_snapshot, recorder, episode.seed)
        assert replayed.score == pytest.approx(episode.score)  # the same trajectory
        decisions = list(episode.decisions.order_by("step"))
        for record, chat, decision in zip(mine, recorder.chats, decisions, strict=True):
            assert record["prompt"] == chat
            assert [m["role"] for m in record["messages"]] == ["system", "user", "assistant"]
            assert record["messages"] == record["prompt"] + record["completion"]
            # the completion is a reply the LLM buyer's own parser reads as the action taken
            assert parse_action(record["completion"][0]["content"]) == (decision.action, None)
            # the rule policy's reason is stored with the decision for analysts, but it is
            # not taught as the action's rationale field: it names the rule's internals
            assert decision.rationale
            assert "rationale" not in json.loads(record["completion"][0]["content"])
            assert decision.rationale not in json.dumps(record, ensure_ascii=False)
            assert record["reward"] == pytest.approx(decision.reward)
            assert (record["valid"], record["actor"]) == (decision.valid, "policy")
            assert (record["score"], record["seed"]) == (episode.score, episode.seed)
            assert (record["scenario"], record["policy"]) == (
                episode.scenario_name,
                episode.policy_name,
            )
    # the random buyer makes mistakes, and the next prompt says so
    refused = [r for r in records if not r["valid"]]
    assert refused and any("INVALID" in r["prompt"][1]["content"] for r in records)


@pytest.mark.parametrize(
    "options, expected",
    [
        ({"scenario": ["bilateral_cooperative"]}, {2, 3}),
        ({"policy": ["expert"]}, {0, 3}),
        ({"policy": ["expert", "random"]}, {0, 1, 3}),
        ({"scenario": ["easy_negotiation"], "policy": ["greedy_lowball"]}, set()),
        ({"scenario": ["hard_arena"]}, set()),  # a known scenario without episodes
        ({"min_score": "0"}, {0, 1, 2, 3}),
    ],
)
def test_filters_pick_the_episodes(played, tmp_path, options, expected) -> None:
    path = tmp_path / "part.jsonl"
    export(output=str(path), **options)
    assert {r["episode_id"] for r in read(path)} == {played[i].pk for i in expected}


def test_min_score_keeps_the_episodes_that_scored_at_least_that(played) -> None:
    scores = sorted(e.score for e in played)
    threshold = scores[1]
    out, err = export("--min-score", str(threshold))
    kept = {json.loads(line)["episode_id"] for line in out.splitlines()}
    assert kept == {e.pk for e in played if e.score >= threshold}
    assert len(kept) == 3 and "to standard output." in err


def test_repeated_options_and_standard_output(played) -> None:
    out, err = export(
        "--scenario", "easy_negotiation", "bilateral_cooperative", "--policy", "expert",
        "--policy", "random", "--output", "-",
    )  # fmt: skip
    lines = out.splitlines()
    assert {json.loads(line)["episode_id"] for line in lines} == {
        played[0].pk,
        played[1].pk,
        played[3].pk,
    }
    assert all(line.startswith('{"messages": ') for line in lines)
    assert "records from 3 episodes to standard output." in err


@pytest.mark.parametrize(
    "args, message",
    [
        (["--scenario", "nope"], "--scenario: Unknown scenario name(s): nope."),
        (["--policy", "expert", "--policy", "ghost"], "--policy: Unknown policy name(s): ghost."),
        (["--min-score", "high"], "--min-score: A number from 0 to 1; got 'high'."),
        (["--min-score", "1.5"], "--min-score: A number from 0 to 1; got '1.5'."),
        (["--min-score", "-0.1"], "--min-score: A number from 0 to 1; got '-0.1'."),
        (["--min-score", "nan"], "--min-score: A number from 0 to 1; got 'nan'."),
        (["--format", "csv"], "--format: Unknown format 'csv'; use jsonl."),
    ],
)
def test_a_bad_filter_is_a_clear_error_and_writes_nothing(
    played, tmp_path, snapshot_counts, args, message
) -> None:
    before = snapshot_counts()
    path = tmp_path / "never.jsonl"
    with pytest.raises(CommandError) as raised:
        export(*args, "--output", str(path))
    assert str(raised.value) == message
    assert list(tmp_path.iterdir()) == []  # no file, not even a partial one
    assert snapshot_counts() == before


def test_every_bad_filter_is_named_at_once(played) -> None:
    with pytest.raises(CommandError) as raised:
        export("--scenario", "x", "--min-score", "2", "--format", "xml")
    assert str(raised.value).split(": ")[0] == "--format"
    assert "--scenario: " in str(raised.value) and "--min-score: " in str(raised.value)


def test_an_unwritable_output_is_a_clear_error(played, tmp_path) -> None:
    with pytest.raises(CommandError, match="Cannot write"):
        export("--output", str(tmp_path / "missing" / "train.jsonl"))
    with pytest.raises(CommandError, match="is a directory"):
        export("--output", str(tmp_path))
    assert list(tmp_path.iterdir()) == []


@pytest.mark.django_db(transaction=True)  # an LLM episode hands its connection back
def test_episodes_with_llm_suppliers_are_skipped_and_the_summary_says_so(
    played, tiny_model, tmp_path
) -> None:
    llm = scenario_copy(
        source=Scenario.objects.get(name="llm_bilateral"), name="llm-bilateral-tiny"
    )
    llm.config = {**llm.config, "supplier_llm": {**llm.config["supplier_llm"]}}
    llm.config["supplier_llm"]["model"] = str(tiny_model)
    llm.save(update_fields=["config"])
    skipped = play("llm-bilateral-tiny", "expert", 1)
    assert skipped.steps > 0
    path = tmp_path / "train.jsonl"
    _, err = export("--output", str(path))
    assert skipped.pk not in {r["episode_id"] for r in read(path)}
    assert f"from {len(played)} episodes" in err
    assert "Skipped 1 episodes whose suppliers are language models" in err


def test_the_records_load_as_a_dataset_that_trl_reads_as_conversations(
    played, tiny_model, tmp_path
) -> None:
    from datasets import load_dataset
    from transformers import AutoTokenizer
    from trl.data_utils import apply_chat_template, is_conversational

    path = tmp_path / "train.jsonl"
    export("--output", str(path), "--policy", "expert")
    dataset = load_dataset("json", data_files=str(path), split="train")
    assert dataset.num_rows == played[0].steps + played[3].steps
    assert set(dataset.column_names) == TRL_COLUMNS | SCALAR_COLUMNS
    row = dataset[0]
    assert is_conversational(row)
    tokenizer = AutoTokenizer.from_pretrained(tiny_model)
    # prompt-completion (GRPO, SFT on completions): the prompt ends where the reply starts
    sample = apply_chat_template(
        {"prompt": row["prompt"], "completion": row["completion"]}, tokenizer
    )
    assert sample["prompt"].endswith("<|im_start|>assistant\n")
    assert row["completion"][0]["content"] in sample["completion"]
    # language modelling on whole conversations (SFT)
    text = apply_chat_template({"messages": row["messages"]}, tokenizer)["text"]
    assert text.startswith(sample["prompt"][: -len("<|im_start|>assistant\n")])
