"""Preconditions and effects of each of the seven actions."""

from __future__ import annotations

import math

import pytest

from negotiation import ProcurementEnv, load_scenario
from negotiation.action_spec import FIELD_SPECS, FIGURES, field_unit

from .conftest import digest, first_supplier_for, negotiate


def _env(**over) -> ProcurementEnv:
    over.setdefault("budget_tightness", 0.0)
    cfg = load_scenario("medium_adversarial", **over)
    env = ProcurementEnv(cfg)
    env.reset(seed=11)
    return env


def _agree(env: ProcurementEnv, rid: str = "R01") -> tuple[str, float]:
    sid = first_supplier_for(env, rid)
    sup = env.world.sup_by_id[sid]
    res = negotiate(env, sid, rid, round(sup.list_prices[rid] * 1.1, 2))
    assert res.info["valid"], res.info
    assert res.info["response"]["response"] == "accept"
    return sid, res.info["response"]["price"]


def test_negotiate_opens_thread_and_gets_counter():
    env = _env()
    sid = first_supplier_for(env, "R01")
    lp = env.world.sup_by_id[sid].list_prices["R01"]
    res = negotiate(env, sid, "R01", round(lp * 0.8, 2))
    assert res.info["error"] is None and res.info["valid"]
    resp = res.info["response"]
    assert resp["supplier_id"] == sid and resp["requirement_id"] == "R01"
    assert resp["response"] in ("accept", "counter", "walk_away")
    assert set(resp["tells"]) >= {
        "urgency",
        "confidence",
        "competing_offers_claim",
        "low_stock_claim",
    }
    assert all(0.0 <= v <= 1.0 for v in resp["tells"].values())
    th = env.world.threads[(sid, "R01")]
    assert len(th.rounds) == 1 and th.rounds[0].buyer_offer == round(lp * 0.8, 2)
    assert res.reward == 0.0


def test_negotiate_preconditions():
    env = _env()
    rid = "R01"
    wrong = next(s.id for s in env.world.suppliers if rid not in s.list_prices)
    res = negotiate(env, wrong, rid, 10.0)
    assert res.info["error"]["code"] == "category_mismatch"
    res = negotiate(env, "S99", rid, 10.0)
    assert res.info["error"]["code"] == "unknown_supplier"
    res = negotiate(env, first_supplier_for(env, rid), "R99", 10.0)
    assert res.info["error"]["code"] == "unknown_requirement"
    sid, _ = _agree(env, rid)
    res = negotiate(env, sid, rid, 1.0)
    assert res.info["error"]["code"] == "thread_agreed"


def test_award_at_agreed_price_and_rule4():
    env = _env(pr_threshold=1e12)
    sid, price = _agree(env)
    r = env.world.req_by_id["R01"]
    qty = min(r.quantity_needed, env.world.sup_by_id[sid].capacity[r.category])
    # Naming a different (token) price is refused: awards only at the agreed price.
    res = env.step(
        {
            "action_type": "award_contract",
            "supplier_id": sid,
            "requirement_id": "R01",
            "quantity": qty,
            "price": 0.01,
        }
    )
    assert res.info["error"]["code"] == "price_mismatch"
    before = env.world.budget_committed
    res = env.step(
        {
            "action_type": "award_contract",
            "supplier_id": sid,
            "requirement_id": "R01",
            "quantity": qty,
        }
    )
    assert res.info["valid"], res.info
    c = env.world.contracts[-1]
    assert c.unit_price == price and c.quantity == qty and c.supplier_id == sid
    assert (
        c.due_week == env.world.week + env.world.sup_by_id[sid].lead_time_weeks
        or env.world.week > c.awarded_week
    )
    assert math.isclose(env.world.budget_committed - before, qty * price)
    assert env.world.threads[(sid, "R01")].status == "awarded"
    assert res.reward > 0


def test_award_without_agreement_is_impossible():
    env = _env(pr_threshold=1e12)
    sid = first_supplier_for(env, "R01")
    res = env.step(
        {
            "action_type": "award_contract",
            "supplier_id": sid,
            "requirement_id": "R01",
            "quantity": 1,
        }
    )
    assert res.info["error"]["code"] == "no_agreement"
    assert not env.world.contracts


def test_award_at_standing_counter():
    env = _env(pr_threshold=1e12)
    sid = first_supplier_for(env, "R01")
    lp = env.world.sup_by_id[sid].list_prices["R01"]
    res = negotiate(env, sid, "R01", round(lp * 0.85, 2))
    if res.info["response"]["response"] != "counter":
        pytest.skip("seed produced no counter")
    counter = res.info["response"]["price"]
    res = env.step(
        {
            "action_type": "award_contract",
            "supplier_id": sid,
            "requirement_id": "R01",
            "quantity": 1,
        }
    )
    assert res.info["valid"]
    assert env.world.contracts[-1].unit_price == counter


def test_award_checks_quantity_budget_and_pr():
    env = _env(pr_threshold=1.0, pr_lead_weeks=0)
    sid, price = _agree(env)
    r = env.world.req_by_id["R01"]
    res = env.step(
        {
            "action_type": "award_contract",
            "supplier_id": sid,
            "requirement_id": "R01",
            "quantity": r.quantity + 1,
        }
    )
    assert res.info["error"]["code"] == "quantity_exceeds_need"
    res = env.step(
        {
            "action_type": "award_contract",
            "supplier_id": sid,
            "requirement_id": "R01",
            "quantity": 1,
        }
    )
    assert res.info["error"]["code"] == "pr_required"
    env.world.budget_total = env.world.budget_committed + 0.5 * price
    res = env.step(
        {
            "action_type": "award_contract",
            "supplier_id": sid,
            "requirement_id": "R01",
            "quantity": 1,
        }
    )
    assert res.info["error"]["code"] == "budget_exceeded"


def test_raise_pr_lifecycle_and_guardrail():
    env = _env(pr_lead_weeks=1)
    r = env.world.req_by_id["R01"]
    cap = 1.1 * r.ceiling_unit_price * r.quantity_needed
    res = env.step({"action_type": "raise_pr", "requirement_id": "R01", "amount": cap * 1.5})
    assert res.info["error"]["code"] in ("amount_exceeds_guardrail", "budget_exceeded")
    res = env.step(
        {"action_type": "raise_pr", "requirement_id": "R01", "amount": round(cap * 0.9, 2)}
    )
    assert res.info["valid"]
    pr = env.world.prs[-1]
    assert pr.status == "pending" and pr.matures_week == env.world.week + 1
    env.step({"action_type": "defer"})
    assert pr.status == "pending"
    env.step({"action_type": "defer"})
    assert pr.status == "approved"


def _two_agreements(env: ProcurementEnv) -> tuple[str, list[str], list[float]]:
    """A requirement two suppliers have agreed a price on, each able to supply all of it."""
    rid = next(
        r.id
        for r in env.world.requirements
        if sum(1 for s in env.world.suppliers if r.id in s.list_prices) >= 2
    )
    sids = [s.id for s in env.world.suppliers if rid in s.list_prices][:2]
    prices = []
    for sid in sids:
        res = negotiate(env, sid, rid, round(env.world.sup_by_id[sid].list_prices[rid] * 1.1, 2))
        assert res.info["response"]["response"] == "accept"
        prices.append(res.info["response"]["price"])
        r = env.world.req_by_id[rid]
        env.world.sup_by_id[sid].capacity[r.category] = r.quantity_needed
    return rid, sids, prices


def _award(env: ProcurementEnv, sid: str, rid: str, qty: int):
    return env.step(
        {"action_type": "award_contract", "supplier_id": sid, "requirement_id": rid,
         "quantity": qty}
    )  # fmt: skip


def test_awards_split_under_the_pr_threshold_need_a_pr_once_their_total_passes_it():
    """The threshold applies to the requirement's spend, not to each award: a purchase split
    into awards under it needs approved PRs covering the whole once the total passes it."""
    env = _env(pr_lead_weeks=3, escalations=2)
    rid, (s1, s2), (p1, p2) = _two_agreements(env)
    need = env.world.req_by_id[rid].quantity_needed
    q1 = need // 2
    env.cfg.pr_threshold = 1.05 * max(q1 * p1, (need - q1) * p2)  # each half passes alone
    env.cfg.pr_guardrail = 5.0  # the agreements are above the ceiling: room for both PRs
    assert _award(env, s1, rid, q1).info["valid"]
    before = digest(env)
    res = _award(env, s2, rid, need - q1)
    assert res.info["error"]["code"] == "pr_required"
    message = res.info["error"]["message"]
    assert f"{q1 * p1:,.2f} of it already contracted" in message and rid in message
    assert digest(env) == before  # refused: nothing changed but the slot
    # Approved PRs must cover the whole spend, the first award's included: one for the
    # second award's cost alone is short. PRs authorise the requirement's spend; an award
    # does not consume them.
    cost2 = round((need - q1) * p2, 2)
    for amount in (cost2, round(q1 * p1, 2) + 0.01):
        res = env.step({"action_type": "raise_pr", "requirement_id": rid, "amount": amount})
        assert res.info["valid"], res.info
        assert env.step({"action_type": "escalate", "requirement_id": rid}).info["valid"]
        res = _award(env, s2, rid, need - q1)
        assert res.info["valid"] == (amount != cost2), res.info
    assert "short" in message
    assert [pr.status for pr in env.world.prs] == ["approved", "approved"]
    assert env.world.req_by_id[rid].quantity_needed == 0


def test_a_requirements_prs_together_ask_at_most_the_guardrail():
    env = _env(pr_lead_weeks=1)
    r = env.world.req_by_id["R01"]
    cap = env.cfg.pr_guardrail * r.ceiling_unit_price * r.quantity
    first = round(0.7 * cap, 2)
    assert env.step({"action_type": "raise_pr", "requirement_id": "R01", "amount": first}).info[
        "valid"
    ]
    before = digest(env)
    res = env.step(
        {"action_type": "raise_pr", "requirement_id": "R01", "amount": round(0.4 * cap, 2)}
    )
    assert res.info["error"]["code"] == "amount_exceeds_guardrail"
    assert f"{cap - first:,.2f}" in res.info["error"]["message"]
    assert digest(env) == before
    res = env.step(
        {"action_type": "raise_pr", "requirement_id": "R01", "amount": round(0.29 * cap, 2)}
    )
    assert res.info["valid"]


def test_defer_closes_week_and_moves_noncritical_deadline():
    env = _env()
    w = env.world.week
    res = env.step({"action_type": "defer"})
    assert res.info["valid"] and env.world.week == w + 1 and env.world.slot == 0
    nc = next(
        (
            r
            for r in env.world.requirements
            if not r.critical and r.deadline_week < env.cfg.weeks - 1
        ),
        None,
    )
    crit = next((r for r in env.world.requirements if r.critical), None)
    if crit is not None:
        res = env.step({"action_type": "defer", "requirement_id": crit.id})
        assert res.info["error"]["code"] == "critical_deadline"
    if nc is not None:
        d = nc.deadline_week
        committed = env.world.budget_committed
        res = env.step({"action_type": "defer", "requirement_id": nc.id})
        assert (
            res.info["valid"]
            and nc.deadline_week == d + 1
            and env.world.budget_committed > committed
        )
        res = env.step({"action_type": "defer", "requirement_id": nc.id})
        assert res.info["error"]["code"] == "no_deferrals_left"


def test_reject_is_final_and_reveals_nothing():
    env = _env()
    sid = first_supplier_for(env, "R01")
    negotiate(env, sid, "R01", 1.0 * env.world.sup_by_id[sid].list_prices["R01"] * 0.9)
    res = env.step({"action_type": "reject", "supplier_id": sid, "requirement_id": "R01"})
    assert res.info["valid"] and res.info["response"] is None and res.reward == 0.0
    assert env.world.threads[(sid, "R01")].status == "rejected"
    res = negotiate(env, sid, "R01", 10.0)
    assert res.info["error"]["code"] == "thread_closed"
    res = env.step({"action_type": "reject", "supplier_id": sid})
    assert res.info["valid"]
    res = env.step({"action_type": "reject", "supplier_id": sid})
    assert res.info["error"]["code"] == "already_rejected"


def test_hedge_splits_between_two_agreements():
    env = _env(pr_threshold=1e12)
    rid = next(
        r.id
        for r in env.world.requirements
        if sum(1 for s in env.world.suppliers if r.id in s.list_prices) >= 2
    )
    sids = [s.id for s in env.world.suppliers if rid in s.list_prices][:2]
    for sid in sids:
        res = negotiate(env, sid, rid, round(env.world.sup_by_id[sid].list_prices[rid] * 1.1, 2))
        assert res.info["response"]["response"] == "accept"
    r = env.world.req_by_id[rid]
    need = r.quantity_needed
    for sid in sids:
        env.world.sup_by_id[sid].capacity[r.category] = need
    res = env.step(
        {
            "action_type": "hedge",
            "requirement_id": rid,
            "supplier_id": sids[0],
            "hedge_supplier_id": sids[1],
            "split": 0.5,
        }
    )
    assert res.info["valid"], res.info
    a, b = env.world.contracts[-2:]
    assert a.quantity + b.quantity == need and a.hedge and b.hedge
    assert env.world.counters.hedges == 1
    res = env.step(
        {
            "action_type": "hedge",
            "requirement_id": rid,
            "supplier_id": sids[0],
            "hedge_supplier_id": sids[0],
            "split": 0.5,
        }
    )
    assert res.info["error"] is not None


def test_escalate_pr_and_thread():
    env = _env(pr_lead_weeks=3, escalations=2)
    r = env.world.req_by_id["R01"]
    env.step(
        {
            "action_type": "raise_pr",
            "requirement_id": "R01",
            "amount": round(r.ceiling_unit_price, 2),
        }
    )
    res = env.step({"action_type": "escalate", "requirement_id": "R01"})
    assert (
        res.info["valid"]
        and env.world.prs[-1].status == "approved"
        and env.world.escalations_left == 1
    )
    sid = first_supplier_for(env, "R02")
    res = negotiate(env, sid, "R02", round(env.world.sup_by_id[sid].list_prices["R02"] * 0.8, 2))
    if res.info["response"]["response"] == "counter":
        before = res.info["response"]["price"]
        res = env.step({"action_type": "escalate", "requirement_id": "R02", "supplier_id": sid})
        assert res.info["valid"]
        after = res.info["response"]["price"]
        hid = env.world.th_hidden[(sid, "R02")]
        assert hid.reservation < after <= before
    res = env.step({"action_type": "escalate", "requirement_id": "R03"})
    assert res.info["error"]["code"] in ("nothing_to_escalate", "no_escalations_left")


@pytest.mark.parametrize(
    "action, code",
    [
        ("not a dict", "not_an_object"),
        ({}, "missing_field"),
        ({"action_type": "dance"}, "unknown_action_type"),
        ({"action_type": 5}, "unknown_action_type"),
        ({"action_type": "defer", "colour": "red"}, "unknown_field"),
        (
            {"action_type": "negotiate", "supplier_id": "S01", "requirement_id": "R01"},
            "missing_field",
        ),
        (
            {"action_type": "negotiate", "supplier_id": 1, "requirement_id": "R01", "price": 5},
            "wrong_type",
        ),
        (
            {
                "action_type": "negotiate",
                "supplier_id": "S01",
                "requirement_id": "R01",
                "price": "5",
            },
            "wrong_type",
        ),
        (
            {
                "action_type": "negotiate",
                "supplier_id": "S01",
                "requirement_id": "R01",
                "price": True,
            },
            "wrong_type",
        ),
        (
            {
                "action_type": "negotiate",
                "supplier_id": "S01",
                "requirement_id": "R01",
                "price": float("nan"),
            },
            "invalid_number",
        ),
        (
            {
                "action_type": "negotiate",
                "supplier_id": "S01",
                "requirement_id": "R01",
                "price": float("inf"),
            },
            "invalid_number",
        ),
        (
            {
                "action_type": "negotiate",
                "supplier_id": "S01",
                "requirement_id": "R01",
                "price": 10**400,  # no float holds it: was an OverflowError
            },
            "invalid_number",
        ),
        (
            {
                "action_type": "negotiate",
                "supplier_id": "S01",
                "requirement_id": "R01",
                "price": -3,
            },
            "out_of_range",
        ),
        (
            {
                "action_type": "negotiate",
                "supplier_id": "S01",
                "requirement_id": "R01",
                "price": 1e15,
            },
            "out_of_range",
        ),
        (
            {
                "action_type": "award_contract",
                "supplier_id": "S01",
                "requirement_id": "R01",
                "quantity": 2.5,
            },
            "wrong_type",
        ),
        (
            {
                "action_type": "award_contract",
                "supplier_id": "S01",
                "requirement_id": "R01",
                "quantity": -1,
            },
            "out_of_range",
        ),
        ({"action_type": "raise_pr", "requirement_id": "R01", "amount": 0}, "out_of_range"),
        (
            {
                "action_type": "hedge",
                "requirement_id": "R01",
                "supplier_id": "S01",
                "hedge_supplier_id": "S02",
                "split": 1.5,
            },
            "out_of_range",
        ),
        ({"action_type": "escalate"}, "missing_field"),
    ],
)
def test_invalid_actions_change_nothing_but_the_slot(action, code):
    env = _env()
    before = digest(env)
    slot = env.world.slot
    res = env.step(action)
    assert res.info["valid"] is False
    assert res.info["error"]["code"] == code
    assert isinstance(res.info["error"]["message"], str) and res.info["error"]["message"]
    assert res.reward < 0
    assert env.world.slot == slot + 1 and env.world.steps_taken == 1
    assert digest(env) == before


def test_malformed_and_precondition_penalties_are_distinct():
    env = _env()
    r1 = env.step({"action_type": "dance"})
    r2 = env.step(
        {
            "action_type": "award_contract",
            "supplier_id": "S01",
            "requirement_id": "R01",
            "quantity": 1,
        }
    )
    assert r1.reward == -env.cfg.malformed_penalty
    assert r2.reward == -env.cfg.invalid_penalty
    assert r1.reward != r2.reward


def test_step_after_done_does_not_raise():
    env = _env()
    while not env.done:
        env.step({"action_type": "defer"})
    res = env.step({"action_type": "defer"})
    assert res.done and res.info["error"]["code"] == "episode_done" and res.reward == 0.0


def _escalated_twice(seeds: range) -> list[tuple[float, float, float, float, tuple]]:
    """(standing counter, answer to a first call, answer to a second, true reservation,
    published range) for a fresh thread on each requirement of each seed."""
    out = []
    for seed in seeds:
        env = ProcurementEnv(
            load_scenario("medium_adversarial", escalations=100, budget_tightness=0.0)
        )
        obs = env.reset(seed=seed)
        published = obs.to_dict()["rules"].get("escalation_fraction_range")
        for r in obs.requirements:
            sid = first_supplier_for(env, r.id)
            offer = round(env.world.sup_by_id[sid].list_prices[r.id] * 0.8, 2)
            res = negotiate(env, sid, r.id, offer)
            if env.done or res.info["response"]["response"] != "counter":
                continue
            answers = [res.info["response"]["price"]]
            for _ in range(2):
                res = env.step(
                    {"action_type": "escalate", "requirement_id": r.id, "supplier_id": sid}
                )
                assert res.info["valid"], res.info["error"]
                answers.append(res.info["response"]["price"])
            truth = env.world.th_hidden[(sid, r.id)].reservation
            out.append((*answers, truth, published))
            if env.done:
                break
    return out


def test_an_escalation_leaves_the_reservation_uncertain_by_the_published_range():
    rows = _escalated_twice(range(4))
    assert len(rows) >= 12
    fractions = []
    for cur, answer, _, truth, published in rows:
        low, high = published  # the observation states the range
        # What a player infers: answer = cur - f (cur - R) with f somewhere in [low, high].
        lowest, highest = cur - (cur - answer) / low, cur - (cur - answer) / high
        assert lowest - 0.01 <= truth <= highest + 0.01  # the truth is inside ...
        # ... an interval as wide as the range makes it: at least half the way to the floor
        assert highest - lowest >= 0.5 * (cur - truth) - 0.02
        fractions.append((cur - answer) / (cur - truth))
    assert (low, high) == (0.2, 0.4)
    assert all(low - 0.01 <= f <= high + 0.01 for f in fractions)
    assert max(fractions) - min(fractions) > 0.1  # hidden and varied, not one public value


def test_two_escalations_of_one_thread_cannot_be_solved_for_the_reservation():
    # With one fraction f for both calls, (cur, t1, t2) is geometric toward R and
    # R = (cur t2 - t1^2) / (cur + t2 - 2 t1) exactly; each call draws its own.
    errors = sorted(
        abs((cur * t2 - t1 * t1) / (cur + t2 - 2 * t1) - truth) / truth
        for cur, t1, t2, truth, _ in _escalated_twice(range(4))
    )
    assert errors[len(errors) // 2] > 0.02


def test_each_figure_declares_what_it_is_and_its_unit() -> None:
    # The decisions table labels an action's numbers from these: a price per unit in the
    # scenario's currency, a quantity in the requirement's item unit, an amount, a share.
    assert FIGURES == ("price", "quantity", "amount", "split")
    assert [FIELD_SPECS[f].label for f in FIGURES] == ["Price / unit", "Qty", "Amount", "Split"]
    assert field_unit("price", "EUR", "box") == "EUR / box"
    assert field_unit("quantity", "EUR", "box") == "box"
    assert field_unit("amount", "EUR", "box") == "EUR"
    assert field_unit("split", "EUR", "box") == "%"
    assert field_unit("price", "USD") == "USD / unit"  # a requirement not known
