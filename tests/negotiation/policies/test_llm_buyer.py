"""The LLM buyer: free and narrator modes, and fallbacks that are counted and recorded,
never silent."""

from __future__ import annotations

import json

import pytest

from negotiation import get_policy, list_policies, run_episode
from negotiation.policies import PolicyParamsError, policy_params_model, validate_policy_params
from tests.negotiation.llm.scripted import ScriptedBackend, narrator, simple_buyer

GARBAGE = "I would like to negotiate with supplier S01, maybe."


def test_llm_is_a_registered_policy_with_a_params_schema() -> None:
    assert "llm" in list_policies()
    schema = policy_params_model("llm").model_json_schema()
    assert schema["properties"]["backend"]["enum"] == [
        "transformers",
        "vllm",
        "openai_compatible",
        "llamacpp",
    ]
    assert schema["properties"]["mode"]["enum"] == ["free", "narrator"]
    assert {"fallback", "model", "temperature", "max_tokens", "max_prompt_chars"} <= set(
        schema["properties"]
    )
    ok = {"backend": "vllm", "model": "m", "mode": "narrator", "fallback": "greedy_lowball"}
    assert validate_policy_params("llm", ok) == ok


@pytest.mark.parametrize(
    ("params", "field", "message"),
    [
        ({"mode": "poetry"}, "mode", "'free' or 'narrator'"),
        ({"fallback": "llm"}, "fallback", "Must be a rule policy"),
        ({"fallback": "telepathy"}, "fallback", "Must be a rule policy"),
        ({"backend": "gpt"}, "backend", "transformers"),
        ({"temperature": "hot"}, "temperature", "valid number"),
        ({"max_prompt_chars": 10}, "max_prompt_chars", "greater than or equal to 500"),
        ({"backend_options": {"timeout_s": [1]}}, "backend_options.timeout_s", "valid"),
    ],
)
def test_bad_llm_params_are_refused_with_the_field_named(params, field, message) -> None:
    with pytest.raises(PolicyParamsError) as exc:
        validate_policy_params("llm", params)
    assert exc.value.errors[0]["field"].startswith(field), exc.value.errors
    assert message in exc.value.errors[0]["message"]


def test_free_mode_plays_the_models_actions_and_records_its_words() -> None:
    backend = ScriptedBackend(simple_buyer)
    policy = get_policy("llm", backend=backend, model="scripted", fallback="expert")
    result = run_episode("bilateral_cooperative", policy, 3)
    assert result.metrics["buyer_llm_calls"] == len(result.steps) == backend.stats.requests
    assert result.metrics["llm_fallbacks"] == result.metrics["llm_parse_failures"] == 0
    first = result.steps[0].to_dict()
    assert first["actor"] == "llm" and first["action"]["action_type"] == "negotiate"
    assert first["message"] == first["action"]["message"].strip()
    assert first["rationale"] == "Opening below the ceiling."
    assert first["llm_fallback"] is False and first["llm_parse_failure"] is False
    assert first["supplier_actor"] == "rule"
    assert any(s.action["action_type"] == "award_contract" for s in result.steps)
    assert result.metrics["contracts"] == 1


def test_unparseable_replies_fall_back_to_the_expert_counted_and_recorded() -> None:
    backend = ScriptedBackend(lambda r: GARBAGE)
    policy = get_policy("llm", backend=backend, fallback="expert")
    result = run_episode("bilateral_hardball", policy, 2)
    expert = run_episode("bilateral_hardball", "expert", 2)
    n = len(result.steps)
    assert [s.action for s in result.steps] == [s.action for s in expert.steps]
    assert result.metrics["llm_parse_failures"] == result.metrics["llm_fallbacks"] == n
    assert policy.stats["llm_parse_failures"] == n
    for step, played in zip(result.steps, expert.steps, strict=True):
        d = step.to_dict()
        assert d["actor"] == "fallback:expert"
        assert d["llm_parse_failure"] and d["llm_fallback"]
        assert d["llm_error"] == "no JSON object in the reply"
        # the row says why the fallback chose its action, as the expert's own row does
        assert d["rationale"] and d["rationale"] == played.decision.rationale


def test_backend_errors_and_exceptions_fall_back_but_are_not_parse_failures() -> None:
    timeouts = ScriptedBackend(simple_buyer, error=lambda r: "timeout after 30 s")
    result = run_episode("bilateral", get_policy("llm", backend=timeouts), 1)
    n = len(result.steps)
    assert result.metrics["llm_fallbacks"] == n and result.metrics["llm_parse_failures"] == 0
    assert result.steps[0].decision.llm_error == "timeout after 30 s"
    assert (
        result.steps[0].decision.actor == "fallback:expert"
        and not result.steps[0].decision.llm_parse_failure
    )

    broken = ScriptedBackend([])  # pops from an empty script: an exception in generate()
    result = run_episode("bilateral", get_policy("llm", backend=broken, fallback="random"), 1)
    assert result.metrics["llm_fallbacks"] == len(result.steps)
    assert result.steps[0].decision.actor == "fallback:random"
    assert result.steps[0].decision.llm_error.startswith("IndexError")


def _cut(reply: str) -> str:
    """The reply as a token limit stops it: inside its last text (the rationale)."""
    assert reply.endswith('"}') and len(json.loads(reply)["rationale"]) > 5
    return reply[:-6]


def test_a_reply_the_token_limit_cut_inside_its_text_keeps_the_models_decision() -> None:
    whole = run_episode(
        "bilateral_cooperative", get_policy("llm", backend=ScriptedBackend(simple_buyer)), 3
    )
    cut = ScriptedBackend(lambda r: _cut(simple_buyer(r)), finish="length")
    result = run_episode("bilateral_cooperative", get_policy("llm", backend=cut), 3)
    assert result.metrics["llm_fallbacks"] == result.metrics["llm_parse_failures"] == 0
    assert len(result.steps) == len(whole.steps)
    for step, full in zip(result.steps, whole.steps, strict=True):
        assert step.decision.actor == "llm"
        assert {k: v for k, v in step.action.items() if k != "rationale"} == {
            k: v for k, v in full.action.items() if k != "rationale"
        }
        assert full.action["rationale"].startswith(step.action["rationale"])
        assert step.action["rationale"] != full.action["rationale"]
        assert step.decision.llm_error == "reply cut at the 96-token limit; its text closed there"
    # the model's next prompt holds the closed reply as its turn: valid JSON
    turns = [m.content for m in cut.requests[-1].messages if m.role == "assistant"]
    assert turns and all(json.loads(t)["action_type"] for t in turns)


def test_a_reply_cut_short_without_the_token_limit_is_not_closed() -> None:
    """Only the backend's "length" finish means the limit cut it; other broken JSON is
    the model's own and falls back, counted."""
    backend = ScriptedBackend(lambda r: _cut(simple_buyer(r)))
    result = run_episode("bilateral_cooperative", get_policy("llm", backend=backend), 3)
    assert result.metrics["llm_parse_failures"] == len(result.steps)
    assert result.steps[0].decision.llm_error == "no JSON object in the reply"


def test_an_invalid_model_action_costs_its_slot_and_its_error_is_shown_next() -> None:
    replies = [
        json.dumps(
            {
                "action_type": "award_contract",
                "supplier_id": "S01",
                "requirement_id": "R01",
                "quantity": 3,
            }
        ),
        json.dumps({"action_type": "defer"}),
    ]
    backend = ScriptedBackend(
        lambda r: replies[0] if "INVALID" not in r.messages[-1].content else replies[1]
    )
    policy = get_policy("llm", backend=backend)
    result = run_episode("bilateral", policy, 4)
    first, second = result.steps[0], result.steps[1]
    assert first.error["code"] == "no_agreement" and first.decision.actor == "llm"
    assert not first.decision.llm_fallback  # the model's own mistake: played, not replaced
    shown = backend.requests[1].messages[-1].content
    assert f"INVALID (no_agreement): {first.error['message']}" in shown
    assert second.action == {"action_type": "defer"}
    assert result.metrics["invalid_actions"] >= 1


def test_narrator_mode_keeps_the_experts_moves_and_adds_the_models_words() -> None:
    backend = ScriptedBackend(narrator)
    policy = get_policy("llm", backend=backend, mode="narrator", fallback="expert")
    result = run_episode("medium_adversarial", policy, 5)
    expert = run_episode("medium_adversarial", "expert", 5)
    assert result.score == expert.score
    for ours, theirs in zip(result.steps, expert.steps, strict=True):
        words = {k: ours.action.pop(k) for k in ("message", "rationale") if k in ours.action}
        assert ours.action == theirs.action
        assert ours.decision.actor == "llm" and ours.decision.rationale == words["rationale"]
        if ours.action["action_type"] == "negotiate":
            asked = f"Could you do {ours.action['price']} per unit?"
            assert ours.decision.message == words["message"] == asked
        else:
            assert "message" not in words and ours.decision.message is None
    assert result.metrics["llm_fallbacks"] == 0


def test_narrator_fallback_keeps_the_action_without_words() -> None:
    policy = get_policy("llm", backend=ScriptedBackend(lambda r: '{"message": 3}'), mode="narrator")
    result = run_episode("bilateral", policy, 0)
    expert = run_episode("bilateral", "expert", 0)
    assert [s.action for s in result.steps] == [s.action for s in expert.steps]
    assert all(
        s.decision.actor == "fallback:expert" and s.decision.llm_parse_failure for s in result.steps
    )
    assert result.metrics["llm_parse_failures"] == len(result.steps)


def test_counts_are_per_episode_when_a_policy_is_reused() -> None:
    policy = get_policy("llm", backend=ScriptedBackend(lambda r: GARBAGE))
    a = run_episode("bilateral", policy, 0)
    b = run_episode("bilateral", policy, 1)
    assert a.metrics["llm_fallbacks"] == len(a.steps)
    assert b.metrics["llm_fallbacks"] == len(b.steps)  # not a's count plus b's


def test_rule_policies_record_policy_as_actor() -> None:
    step = run_episode("bilateral", "expert", 0).steps[0].to_dict()
    assert step["actor"] == "policy" and step["message"] is None and not step["llm_fallback"]
    assert step["supplier_actor"] == "rule" and step["guard_interventions"] == 0


def test_a_replayed_prefix_is_in_the_chat_as_training_writes_it() -> None:
    """Resuming from stored actions (a crash, a GRPO rollout), the model's first prompt is
    the chat it would read had it played them: the training data's decision point there."""
    from negotiation.training.grpo import decision_points, expert_sources

    source = expert_sources([("bilateral", 4)])[0]
    points = {p["prefix"]: p["prompt"] for p in decision_points([source], 3_000, seed=0)}
    for k in (1, len(source.actions) - 1):
        backend = ScriptedBackend(simple_buyer)
        policy = get_policy("llm", backend=backend, max_prompt_chars=3_000)
        run_episode("bilateral", policy, 4, actions_prefix=list(source.actions[:k]))
        first = [{"role": m.role, "content": m.content} for m in backend.requests[0].messages]
        assert first == points[json.dumps(list(source.actions[:k]))]
