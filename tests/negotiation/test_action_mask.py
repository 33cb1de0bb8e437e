"""The action mask: sound on every preset (every admitted action passes the engine), ids
that fit each other, numbers at the engine's own limits, and a schema that admits only it."""

from __future__ import annotations

import copy
import json
import random

import pytest

from negotiation import ProcurementEnv, list_presets, load_scenario
from negotiation.action_mask import ActionMask, Allowed, Option, valid_actions
from negotiation.actions import max_offer_price


def _sample(option: Option, rng: random.Random) -> dict:
    """A random action of ``option``, boundary values included."""
    action = {"action_type": option.action_type}
    for name, allowed in option.fields:
        if not allowed.required and rng.random() < 0.3:
            continue
        if allowed.values:
            action[name] = rng.choice(allowed.values)
        elif allowed.integer:
            action[name] = (
                rng.choice([int(allowed.low), int(allowed.high)])
                if rng.random() < 0.5
                else rng.randint(int(allowed.low), int(allowed.high))
            )
        else:
            pick = rng.random()
            action[name] = (
                allowed.high if pick < 0.3 else round(rng.uniform(0.01, allowed.high), 2) or 0.01
            )
    if option.action_type == "negotiate" and rng.random() < 0.5:
        action["message"] = "Can we talk about the price?"
    return action


def _walk(preset: str, seed: int, rng: random.Random) -> int:
    """Play an episode of random admitted actions; before each, check several other
    admitted actions on a copy. Returns how many actions were checked."""
    env = ProcurementEnv(load_scenario(preset))
    obs = env.reset(seed=seed)
    checked = 0
    while not obs.done:
        mask = valid_actions(obs)
        assert mask.options, "defer is always valid"
        rare = [o for o in mask.options if o.action_type in ("hedge", "escalate")]
        for option in [*rare, *rng.choices(mask.options, k=3)]:
            action = _sample(option, rng)
            assert mask.admits(action)
            result = copy.deepcopy(env).step(action)
            assert result.info["valid"], (preset, seed, action, result.info["error"])
            checked += 1
        # Prefer negotiating and awarding so that agreements, awards and PRs occur.
        weights = [
            3 if o.action_type in ("negotiate", "award_contract") else 1 for o in mask.options
        ]
        action = _sample(rng.choices(mask.options, weights)[0], rng)
        result = env.step(action)
        assert result.info["valid"], (preset, seed, action, result.info["error"])
        obs = result.observation
    return checked


@pytest.mark.parametrize("preset", list_presets(include_llm=False))
def test_every_admitted_action_is_valid(preset):
    rng = random.Random(preset)
    assert sum(_walk(preset, seed, rng) for seed in range(8)) >= 24


def _bilateral():
    env = ProcurementEnv(load_scenario("bilateral"))
    return env, env.reset(seed=0)


def test_a_fresh_bilateral_offers_negotiation_not_awards():
    _, obs = _bilateral()
    mask = valid_actions(obs)
    assert "award_contract" not in mask.action_types
    (neg,) = [o for o in mask.options if o.action_type == "negotiate"]
    fields = dict(neg.fields)
    req = obs.requirements[0]
    assert fields["requirement_id"].values == (req.id,)
    assert 0 < fields["price"].high <= max_offer_price(req)
    assert max_offer_price(req) - fields["price"].high < 0.01
    assert not mask.admits({**_action(neg), "price": max_offer_price(req) + 1})


def _action(option: Option) -> dict:
    action = {"action_type": option.action_type}
    for name, allowed in option.fields:
        if allowed.required:
            action[name] = allowed.values[0] if allowed.values else allowed.high
    return action


def test_an_agreement_offers_its_award_and_no_more_offers():
    env, obs = _bilateral()
    (neg,) = [o for o in valid_actions(obs).options if o.action_type == "negotiate"]
    sid = dict(neg.fields)["supplier_id"].values[0]
    rid = dict(neg.fields)["requirement_id"].values[0]
    list_price = obs.supplier(sid).list_prices[rid]
    obs = env.step({**_action(neg), "price": round(list_price * 1.05, 2)}).observation
    assert obs.thread(sid, rid).status == "agreed"
    mask = valid_actions(obs)
    assert not [
        o
        for o in mask.options
        if o.action_type == "negotiate" and dict(o.fields)["supplier_id"].values == (sid,)
    ]
    (award,) = [o for o in mask.options if o.action_type == "award_contract"]
    most = int(dict(award.fields)["quantity"].high)
    price = obs.thread(sid, rid).agreed_price
    req, sup = obs.requirement(rid), obs.supplier(sid)
    assert most <= min(req.quantity_needed, sup.capacity[req.category])
    assert most * price <= obs.budget_remaining + 1e-6
    # the limit is the engine's: one more unit is refused
    too_many = {**_action(award), "quantity": most + 1}
    assert not copy.deepcopy(env).step(too_many).info["valid"]
    assert copy.deepcopy(env).step({**_action(award), "quantity": most}).info["valid"]


def test_the_schema_admits_exactly_the_options():
    xgr = pytest.importorskip("xgrammar")
    from transformers import AutoTokenizer

    from negotiation.llm.models import smollm2_folder

    tokenizer = AutoTokenizer.from_pretrained(smollm2_folder())
    compiler = xgr.GrammarCompiler(xgr.TokenizerInfo.from_huggingface(tokenizer))
    _, obs = _bilateral()
    mask = valid_actions(obs)
    grammar = compiler.compile_json_schema(json.dumps(mask.json_schema(200)), any_whitespace=False)

    def accepts(action: dict) -> bool:
        return xgr.GrammarMatcher(grammar).accept_string(json.dumps(action))

    (neg,) = [o for o in mask.options if o.action_type == "negotiate"]
    good = {**_action(neg), "price": 12.5, "message": "Hello", "rationale": "why"}
    assert accepts(good) and mask.admits(good)
    for bad in (
        {**good, "price": dict(neg.fields)["price"].high + 1},
        {**good, "price": 0},
        {**good, "supplier_id": "S99"},
        {
            "action_type": "award_contract",
            "supplier_id": good["supplier_id"],
            "requirement_id": good["requirement_id"],
            "quantity": 1,
        },
    ):
        assert not accepts(bad) and not mask.admits(bad), bad


def test_allowed_bounds():
    price = Allowed(low=0.0, high=10.0)
    assert price.admits(10.0) and price.admits(0.001)
    assert not price.admits(0) and not price.admits(10.01) and not price.admits(True)
    qty = Allowed(low=1, high=5, integer=True)
    assert qty.admits(5) and qty.admits(5.0) and not qty.admits(5.5) and not qty.admits(6)
    assert ActionMask().json_schema(10) == {"anyOf": []}
