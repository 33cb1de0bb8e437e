"""The expert against sellers whose ask stays above its cap (policies/expert/over_cap.py):
the rules on their own, and whole bilateral episodes against the field family's AgentK
and HardHeaded (suppliers/field.py; skipped without negmas-genius-agents). The seeds are
from the tuning range (100000 on); reports use seeds 0 on."""

from __future__ import annotations

import importlib.util

import pytest

from negotiation import ProcurementEnv, get_policy, load_scenario
from negotiation.policies.base import Policy
from negotiation.policies.expert import over_cap

needs_genius = pytest.mark.skipif(
    importlib.util.find_spec("negmas_genius_agents") is None,
    reason="negmas-genius-agents is not installed",
)
# AgentK threads the expert lost before over_cap.py (its midway offer at the seller's
# patience, then the cap refused by AgentK's draw), and two it kept.
AGENT_K_SEEDS = (100000, 100002, 100004, 100006, 100008, 100010, 100015, 100016)


def test_steady_clock_is_a_geometric_curve():
    assert over_cap.steady_clock([45.89, 85.22, 150.78])  # a Boulware seller's last moves
    assert not over_cap.steady_clock([0.16, 1.0, 1.54])  # AgentK: growth 6.3 then 1.5
    assert not over_cap.steady_clock([0.0, 0.25, 0.88])  # started from a stall
    assert not over_cap.steady_clock([59.0, 52.44, 39.34])  # slowing down (a conceder)


def test_patience_offer_only_for_a_moving_ask_above_the_cap():
    cap, last = 30.8, 18.09
    near = over_cap.patience_offer((36.25, 36.02, 35.86, 34.86, 33.32), last, cap)
    assert near == pytest.approx(last + over_cap.NEAR_CAP * (cap - last), abs=0.01)
    assert last < near <= cap
    assert over_cap.patience_offer((36.0, 35.0, 33.0, 30.0), last, cap) is None  # under cap
    assert over_cap.patience_offer((36.4, 36.4, 36.4, 36.4), last, cap) is None  # stalled
    clock = (40.0, 39.0, 37.0, 33.0)  # steps 1, 2, 4: a steady clock
    assert over_cap.patience_offer(clock, last, cap) is None
    assert over_cap.patience_offer((36.0, 35.0), last, cap) is None  # too few answers


def test_echoed_counter():
    assert over_cap.echoed(20.0, 20.01, 25.0)
    assert not over_cap.echoed(20.02, 20.01, 25.0)
    assert not over_cap.echoed(20.0, None, 25.0)
    assert not over_cap.echoed(26.0, 27.0, 25.0)  # not affordable


def play(policy: Policy, persona: str, seed: int) -> ProcurementEnv:
    env = ProcurementEnv(load_scenario("bilateral", persona=persona))
    obs = env.reset(seed=seed)
    while not env.done:
        obs = env.step(policy.act(obs)).observation
    return env


class CeilingBuyer(Policy):
    """Offers the ceiling on every offer and awards an agreement: what any buyer could
    at best get out of a seller that never accepts under it."""

    def act(self, obs):
        r, s = obs.requirements[0], obs.suppliers[0]
        th = obs.threads.get((s.id, r.id))
        if th is not None and th.status == "agreed":
            qty = min(r.quantity_needed, s.capacity.get(r.category, 0))
            return {"action_type": "award_contract", "supplier_id": s.id,
                    "requirement_id": r.id, "quantity": qty}  # fmt: skip
        if th is not None and th.status != "open":
            return {"action_type": "defer"}
        return {"action_type": "negotiate", "supplier_id": s.id, "requirement_id": r.id,
                "price": round(r.ceiling_unit_price - 0.005, 2)}  # fmt: skip


@needs_genius
@pytest.mark.parametrize("seed", AGENT_K_SEEDS)
def test_expert_keeps_agent_k_deals(seed: int):
    env = play(get_policy("expert", seed=seed), "field_agent_k", seed)
    assert env.score().metrics["contracts"] == 1, "lost a deal AgentK would close"


@needs_genius
@pytest.mark.parametrize("seed", (100000, 100001, 100002))
def test_hardheaded_takes_no_offer_under_the_ceiling(seed: int):
    """HardHeaded's target stays above the ceiling for its whole horizon (its concession
    starts near the end of a negmas clock that reads at most (patience + 1) / (patience
    + 2) here): a deal is not feasible, however the expert bargains."""
    assert play(CeilingBuyer(seed), "field_hardheaded", seed).score().metrics["contracts"] == 0
