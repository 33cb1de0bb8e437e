from __future__ import annotations

import statistics

import pytest

from negotiation import Curriculum, apply_tier, load_scenario, run_episode
from negotiation.config import TIERS


def test_tiers_really_change_the_config():
    base = load_scenario("medium_adversarial")
    cfgs = [apply_tier(base, t) for t in TIERS]
    assert [c.curriculum_tier for c in cfgs] == list(TIERS)
    assert cfgs[0].rival_aggression < cfgs[-1].rival_aggression
    assert cfgs[0].deception_level < cfgs[-1].deception_level
    assert cfgs[0].budget_tightness < cfgs[-1].budget_tightness
    assert cfgs[0].persona_mix["deceptive"] < cfgs[-1].persona_mix["deceptive"]
    assert cfgs[0].n_suppliers == base.n_suppliers
    # Round-trips and stays valid.
    assert load_scenario(cfgs[2].model_dump(mode="json")) == cfgs[2]
    b = apply_tier(load_scenario("bilateral"), "novice")
    assert b.bilateral_persona == "cooperative" and b.mode == "bilateral"
    with pytest.raises(ValueError):
        apply_tier(base, "grandmaster")


def test_harder_tiers_are_harder_for_the_expert():
    base = load_scenario("medium_adversarial")
    easy = statistics.mean(
        run_episode(apply_tier(base, "novice"), "expert", s, record_steps=False).score
        for s in range(20)
    )
    hard = statistics.mean(
        run_episode(apply_tier(base, "master"), "expert", s, record_steps=False).score
        for s in range(20)
    )
    assert easy > hard


def test_curriculum_advances_on_rolling_average():
    c = Curriculum(load_scenario("easy_negotiation"), window=3, promote_at=0.5, demote_at=0.1)
    assert c.tier == "novice"
    assert c.record(0.9) is None and c.record(0.9) is None
    assert c.record(0.9) == "apprentice"
    assert c.config().curriculum_tier == "apprentice"
    for _ in range(2):
        c.record(0.3)
    assert c.record(0.3) is None and c.tier == "apprentice"
    c2 = Curriculum(load_scenario("easy_negotiation"), tier="practitioner", window=2, demote_at=0.2)
    c2.record(0.0)
    assert c2.record(0.0) == "apprentice"
