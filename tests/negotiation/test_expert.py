"""The expert (policies/expert/): its safety promises against the responsive suppliers."""

from __future__ import annotations

import pytest

from negotiation import ProcurementEnv, get_policy, load_scenario
from negotiation.policies.expert.beliefs import SAFE_OPEN_LIST, SAFE_OPEN_REF, SAFE_ROUNDS
from negotiation.suppliers import PERSONA_PARAMS


def _play(preset: str, seed: int) -> ProcurementEnv:
    env = ProcurementEnv(load_scenario(preset))
    obs = env.reset(seed=seed)
    pol = get_policy("expert", seed=seed)
    while not env.done:
        res = env.step(pol.act(obs))
        assert res.info["valid"], res.info["error"]
        obs = res.observation
    return env


def test_the_safe_bounds_come_from_the_persona_ranges():
    assert min(int(p["patience"][0]) for p in PERSONA_PARAMS.values()) == SAFE_ROUNDS
    assert 0.4 < SAFE_OPEN_LIST < SAFE_OPEN_REF < 0.8


@pytest.mark.parametrize(
    "preset",
    ["bilateral_hardball", "bilateral_cooperative", "bilateral_deceptive",
     "bilateral_distressed", "medium_adversarial", "hard_arena"],
)  # fmt: skip
def test_the_expert_never_insults_stalls_or_outwaits_a_supplier(preset):
    """Its openings sit above every insult line, it moves every round unless its own ceiling
    stops it, and in the arena it stops offering before any persona's patience: no strike,
    no hardening, no walk-out."""
    for seed in range(20):
        env = _play(preset, seed)
        for key, hid in env.th_hidden.items():
            assert hid.strikes == 0 and not hid.hardened, (seed, key)
            if env.cfg.mode == "arena":
                assert len(hid.offers) <= SAFE_ROUNDS, (seed, key)
        walked = [k for k, th in env.threads.items() if th.status == "walked_away"]
        assert not walked, (seed, walked)


@pytest.mark.parametrize("persona", ["hardball", "cooperative", "deceptive", "distressed"])
def test_the_final_offer_never_costs_a_bilateral_deal(persona):
    deals = [_play(f"bilateral_{persona}", s).score().metrics["deal_rate"] for s in range(40)]
    assert deals == [1.0] * 40
