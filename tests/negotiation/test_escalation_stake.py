"""The money an escalation puts at stake, read off the observation by the engine's own
check: a pending PR's amount, a thread's standing counter x the quantity still needed,
None when the engine would refuse the escalation."""

from __future__ import annotations

from negotiation import ProcurementEnv, get_policy, load_scenario
from negotiation.escalation_stake import escalation_at_stake, escalation_stake

from .conftest import first_supplier_for, negotiate


def _env() -> ProcurementEnv:
    env = ProcurementEnv(load_scenario("medium_adversarial", budget_tightness=0.0, pr_lead_weeks=3))
    env.reset(seed=11)
    return env


def test_a_pr_escalation_stakes_the_prs_amount() -> None:
    env = _env()
    amount = round(env.world.req_by_id["R01"].ceiling_unit_price, 2)
    obs = env.step({"action_type": "raise_pr", "requirement_id": "R01", "amount": amount})
    escalate = {"action_type": "escalate", "requirement_id": "R01"}
    assert escalation_stake(obs.observation, escalate) == amount
    answered = {**escalate, "approval": {"decision": "refused", "by": "x"}}
    assert escalation_stake(obs.observation, answered) == amount  # the answer is not asked


def test_a_thread_escalation_stakes_the_standing_counter_times_the_quantity_needed() -> None:
    env = _env()
    sid = first_supplier_for(env, "R02")
    price = round(env.world.sup_by_id[sid].list_prices["R02"] * 0.8, 2)
    obs = negotiate(env, sid, "R02", price).observation
    thread, need = obs.thread(sid, "R02"), obs.requirement("R02").quantity_needed
    assert thread.counter_price is not None and need > 0
    escalate = {"action_type": "escalate", "requirement_id": "R02", "supplier_id": sid}
    assert escalation_stake(obs, escalate) == thread.counter_price * need


def test_nothing_is_at_stake_when_the_engine_would_refuse_the_escalation() -> None:
    obs = _env().step({"action_type": "defer"}).observation
    assert escalation_stake(obs, {"action_type": "escalate", "requirement_id": "R03"}) is None
    assert escalation_stake(obs, {"action_type": "escalate", "requirement_id": "nope"}) is None


def test_the_stake_is_none_exactly_when_the_engine_refuses_the_escalation() -> None:
    """No escalation the engine plays can skip its approver by having no stake."""
    seen = set()
    for name, seed in [("random", 0), ("random", 1), ("expert", 2), ("expert", 3)]:
        env = ProcurementEnv(load_scenario("hard_arena", escalations=50))
        obs, policy = env.reset(seed=seed), get_policy(name, seed=seed)
        while not obs.done:
            action = policy.act(obs)
            escalates = action["action_type"] == "escalate"
            stake = escalation_stake(obs, action) if escalates else None
            res = env.step(action)
            if escalates:
                assert (stake is None) == (not res.info["valid"]), (action, res.info["error"])
                seen.add(stake is None)
            obs = res.observation
    assert seen == {True, False}


def test_the_stake_names_the_pr_or_the_thread_an_approver_decides_on() -> None:
    env = _env()
    amount = round(env.world.req_by_id["R01"].ceiling_unit_price, 2)
    obs = env.step({"action_type": "raise_pr", "requirement_id": "R01", "amount": amount})
    pr = obs.observation.purchase_requisitions[0]
    escalate = {"action_type": "escalate", "requirement_id": "R01"}
    stake = escalation_at_stake(obs.observation, escalate)
    assert stake.amount == amount and f"{amount:,.2f}" in stake.subject
    assert stake.subject.startswith(f"approve {pr.id} for R01")
    sid = first_supplier_for(env, "R02")
    price = round(env.world.sup_by_id[sid].list_prices["R02"] * 0.8, 2)
    after = negotiate(env, sid, "R02", price).observation
    counter = after.thread(sid, "R02").counter_price
    call = {"action_type": "escalate", "requirement_id": "R02", "supplier_id": sid}
    subject = escalation_at_stake(after, call).subject
    assert f"{sid}'s standing counter for R02" in subject and f"{counter:,.2f} per" in subject
