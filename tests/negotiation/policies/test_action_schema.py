"""The model-facing action schema mirrors the engine's seven actions, and the parser
accepts exactly what the engine would take as well-formed."""

from __future__ import annotations

import json

import pytest

from negotiation import ProcurementEnv, load_scenario
from negotiation.actions import ACTION_TYPES, FIELDS
from negotiation.llm.replies import first_json_object
from negotiation.policies.action_schema import ACTION_MODELS, action_json_schema, parse_action

MALFORMED = {
    "not_an_object",
    "missing_field",
    "unknown_action_type",
    "unknown_field",
    "wrong_type",
    "invalid_number",
    "out_of_range",
    "message_too_long",
}


def _fields(model) -> tuple[set[str], set[str]]:
    req = {n for n, f in model.model_fields.items() if f.is_required()} - {"action_type"}
    opt = {n for n, f in model.model_fields.items() if not f.is_required()} - {"rationale"}
    return req, opt


def test_one_model_per_engine_action_with_the_engines_fields() -> None:
    tags = [m.model_fields["action_type"].annotation.__args__[0] for m in ACTION_MODELS]
    assert tags == list(ACTION_TYPES)
    for tag, model in zip(tags, ACTION_MODELS, strict=True):
        required, optional = FIELDS[tag]
        assert _fields(model) == (set(required), set(optional)), tag


def test_schema_is_flat_enough_for_a_grammar_compiler() -> None:
    schema = action_json_schema()
    text = json.dumps(schema)
    for keyword in ("$ref", "$defs", "discriminator", "oneOf", "title", "null"):
        assert keyword not in text, keyword
    assert len(schema["anyOf"]) == 7
    for branch in schema["anyOf"]:
        assert branch["additionalProperties"] is False and branch["type"] == "object"
        assert branch["properties"]["action_type"]["const"] in ACTION_TYPES
    hedge = schema["anyOf"][ACTION_TYPES.index("hedge")]["properties"]["split"]
    assert hedge == {"exclusiveMaximum": 1.0, "exclusiveMinimum": 0.0, "type": "number"}


@pytest.mark.parametrize(
    "text",
    [
        '{"action_type": "defer"}',
        'Sure! ```json\n{"action_type": "defer"}\n```',
        'I think {not json} then {"action_type": "defer"} and {"action_type": "reject"}',
    ],
)
def test_the_first_json_object_is_taken_from_prose_or_fences(text: str) -> None:
    assert parse_action(text) == ({"action_type": "defer"}, None)


@pytest.mark.parametrize(
    ("reply", "reason"),
    [
        ("no json here", "no JSON object"),
        ('{"action_type": "fly"}', "does not match any of the expected tags"),
        ('{"action_type": "defer", "foo": 1}', "defer.foo: Extra inputs"),
        ('{"action_type": "raise_pr", "requirement_id": "R01", "amount": "5"}', "amount"),
        ('{"action_type": "raise_pr", "requirement_id": "R01", "amount": NaN}', "amount"),
        ('{"action_type": "raise_pr", "requirement_id": "R01", "amount": -3}', "greater than 0"),
        (
            '{"action_type": "award_contract", "supplier_id": "S01", "requirement_id": "R01",'
            ' "quantity": 4.5}',
            "valid integer",
        ),
        (
            '{"action_type": "award_contract", "supplier_id": "S01", "requirement_id": "R01",'
            ' "quantity": true}',
            "valid integer",
        ),
        (
            '{"action_type": "hedge", "requirement_id": "R01", "supplier_id": "S01",'
            ' "hedge_supplier_id": "S02", "split": 1.0}',
            "less than 1",
        ),
        ('{"action_type": "negotiate", "supplier_id": "S01", "requirement_id": "R01"}', "price"),
        ('[{"action_type": "defer"}]', "defer"),  # a list holding an object: the object
    ],
)
def test_unusable_replies_give_a_reason(reply: str, reason: str) -> None:
    action, error = parse_action(reply)
    if reason == "defer":
        assert action == {"action_type": "defer"}
        return
    assert action is None and reason in error


def test_whole_number_floats_are_quantities_as_in_the_engine() -> None:
    text = '{"action_type": "award_contract", "supplier_id": "S01", "requirement_id": "R01",'
    assert parse_action(text + ' "quantity": 40.0}')[0]["quantity"] == 40


def _samples(env: ProcurementEnv) -> list[dict]:
    sid = next(s.id for s in env.world.suppliers if "R01" in s.list_prices)
    other = next(s.id for s in env.world.suppliers if s.id != sid)
    base = {"supplier_id": sid, "requirement_id": "R01"}
    return [
        {"action_type": "negotiate", **base, "price": 10.0, "message": "hi", "rationale": "r"},
        {"action_type": "award_contract", **base, "quantity": 1, "price": 5.0},
        {"action_type": "raise_pr", "requirement_id": "R01", "amount": 100.0},
        {"action_type": "defer"},
        {"action_type": "reject", "supplier_id": other},
        {"action_type": "hedge", **base, "hedge_supplier_id": other, "split": 0.5},
        {"action_type": "escalate", "requirement_id": "R01"},
    ]


def test_whatever_parses_is_well_formed_for_the_engine() -> None:
    """A parsed action may fail a precondition (no agreement yet), never the schema."""
    for sample in _samples(_env()):
        action, error = parse_action(json.dumps(sample))
        assert error is None and action == sample
        env = _env()
        res = env.step(action)
        assert res.info["error"] is None or res.info["error"]["code"] not in MALFORMED, (
            sample,
            res.info["error"],
        )


def test_what_the_engine_calls_malformed_does_not_parse() -> None:
    env = _env()
    for bad in (
        {"action_type": "negotiate", "supplier_id": 3, "requirement_id": "R01", "price": 1.0},
        {"action_type": "negotiate", "supplier_id": "S01", "requirement_id": "R01", "price": 0},
        {"action_type": "raise_pr", "requirement_id": "R01", "amount": 1.0, "message": "x"},
        {"action_type": "defer", "rationale": "x" * 2001},
    ):
        assert parse_action(json.dumps(bad))[0] is None, bad
        assert env.step(bad).info["error"]["code"] in MALFORMED


def _env() -> ProcurementEnv:
    env = ProcurementEnv(load_scenario("medium_adversarial"))
    env.reset(seed=2)
    return env


def test_first_json_object_refuses_text_without_one() -> None:
    with pytest.raises(ValueError):
        first_json_object("[1, 2] and {broken")
