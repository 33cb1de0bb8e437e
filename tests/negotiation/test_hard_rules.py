"""Hard rules and invariants under thousands of random and adversarial buyer steps."""

from __future__ import annotations

import itertools
import math

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from negotiation import ProcurementEnv, load_scenario
from negotiation.suppliers.guard import BAND

PRESETS = ["easy_negotiation", "medium_adversarial", "hard_arena", "bilateral_deceptive"]

ids = st.sampled_from(
    ["S01", "S02", "S03", "S05", "S12", "S99", "R01", "R02", "R04", "R99", "", "x" * 200]
)
nums = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.integers(min_value=-(10**12), max_value=10**12),
    st.floats(min_value=0.01, max_value=5000),
    st.sampled_from([0.01, 1, 5.5, 100, 1e9]),
)
junk = st.one_of(st.none(), st.text(max_size=5), st.lists(st.integers(), max_size=2), st.booleans())
field_names = st.sampled_from(
    [
        "supplier_id",
        "requirement_id",
        "price",
        "quantity",
        "amount",
        "split",
        "hedge_supplier_id",
        "message",
        "rationale",
        "zzz",
    ]
)
action_types = st.sampled_from(
    ["negotiate", "award_contract", "raise_pr", "defer", "reject", "hedge", "escalate", "bogus"]
)
actions = st.one_of(
    st.fixed_dictionaries(
        {"action_type": action_types},
        optional={
            "supplier_id": ids,
            "requirement_id": ids,
            "hedge_supplier_id": ids,
            "price": nums,
            "quantity": nums,
            "amount": nums,
            "split": nums,
            "message": st.text(max_size=20),
        },
    ),
    st.dictionaries(field_names, st.one_of(ids, nums, junk), max_size=4),
    junk,
)


def _check_invariants(env: ProcurementEnv, res) -> None:
    assert isinstance(res.reward, float) and math.isfinite(res.reward)
    assert 0.0 <= res.info["running_score"] <= 1.0
    assert env.world.budget_committed <= env.world.budget_total + 1e-6
    for r in env.world.requirements:
        assert r.delivered + r.pending <= r.quantity
    resp = res.info["response"]
    if resp is not None:
        hid = env.world.th_hidden[(resp["supplier_id"], resp["requirement_id"])]
        if resp["response"] == "accept":
            assert resp["price"] >= hid.reservation - 1e-9  # rule 1
        elif resp["response"] == "counter":
            assert resp["price"] >= hid.reservation * (1 + BAND) - 1e-6  # rule 1 + band
    for key, th in env.world.threads.items():
        hid = env.world.th_hidden[key]
        counters = [
            rd.supplier_price for rd in th.rounds if rd.response in ("counter", "escalation")
        ]
        assert all(b <= a + 1e-9 for a, b in itertools.pairwise(counters))  # rule 3
        for rd in th.rounds:
            assert f"{hid.reservation:.2f}" not in rd.message  # rule 2
    for c in env.world.contracts:
        th = env.world.threads[(c.supplier_id, c.requirement_id)]
        offered = {rd.buyer_offer for rd in th.rounds} | {rd.supplier_price for rd in th.rounds}
        assert c.unit_price in offered  # rule 4: only at an agreed/standing price
        assert (
            c.unit_price
            >= env.world.th_hidden[(c.supplier_id, c.requirement_id)].reservation - 1e-9
        )


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    preset=st.sampled_from(PRESETS),
    seed=st.integers(min_value=0, max_value=10_000),
    seq=st.lists(actions, min_size=1, max_size=40),
)
def test_random_actions_never_raise_and_keep_rules(preset, seed, seq):
    env = ProcurementEnv(load_scenario(preset))
    env.reset(seed=seed)
    for a in seq:
        if env.done:
            break
        res = env.step(a)
        _check_invariants(env, res)


def _adversarial_action(env: ProcurementEnv, i: int, rng) -> dict:
    """Plausible but hostile: lowballs, offer ladders, award spam, reject/escalate/defer spam."""
    r = rng.choice(env.world.requirements)
    sups = [s for s in env.world.suppliers if r.id in s.list_prices] or env.world.suppliers
    s = rng.choice(sups)
    lp = s.list_prices.get(r.id, r.reference_price)
    kind = rng.random()
    if kind < 0.5:
        return {
            "action_type": "negotiate",
            "supplier_id": s.id,
            "requirement_id": r.id,
            "price": round(lp * rng.choice([0.05, 0.3, 0.6, 0.7, 0.8, 0.9, 1.0, 1.2]), 2),
        }
    if kind < 0.7:
        return {
            "action_type": "award_contract",
            "supplier_id": s.id,
            "requirement_id": r.id,
            "quantity": max(1, r.quantity_needed),
            **({"price": 0.01} if rng.random() < 0.3 else {}),
        }
    if kind < 0.8:
        return {
            "action_type": "raise_pr",
            "requirement_id": r.id,
            "amount": r.ceiling_unit_price * r.quantity * rng.choice([0.5, 1.0, 5.0]),
        }
    return rng.choice(
        [
            {"action_type": "escalate", "requirement_id": r.id, "supplier_id": s.id},
            {"action_type": "defer", "requirement_id": r.id},
            {
                "action_type": "hedge",
                "requirement_id": r.id,
                "supplier_id": s.id,
                "hedge_supplier_id": rng.choice(sups).id,
                "split": 0.5,
            },
        ]
    )


def test_thousands_of_adversarial_steps_keep_rules():
    import random

    total = 0
    for preset in PRESETS:
        for seed in range(16):
            env = ProcurementEnv(load_scenario(preset))
            env.reset(seed=seed)
            rng = random.Random(seed)
            i = 0
            while not env.done:
                res = env.step(_adversarial_action(env, i, rng))
                _check_invariants(env, res)
                i += 1
            total += i
            assert 0.0 <= env.score().score <= 1.0
    assert total >= 2000
