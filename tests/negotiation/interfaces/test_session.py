"""TrainingSession: the scenario/tier/curriculum contract the OpenEnv server and the TRL
environment share."""

from __future__ import annotations

import pytest

from negotiation import apply_tier, get_policy, load_scenario
from negotiation.interfaces.session import SessionError, TrainingSession
from negotiation.limits import MAX_SEED


def _finish(session: TrainingSession, obs, policy: str = "expert") -> float:
    pol = get_policy(policy, seed=0)
    while not obs.done:
        obs = session.step(pol.act(obs)).observation
    return session.score()


def test_a_tier_sets_the_worlds_parameters() -> None:
    session = TrainingSession()
    obs = session.reset(scenario="bilateral", seed=4, tier="novice")
    assert session.env is not None
    expected = apply_tier(load_scenario("bilateral"), "novice")
    assert session.env.cfg.bilateral_persona == expected.bilateral_persona == "cooperative"
    assert obs.max_rounds == expected.bilateral_max_rounds
    meta = session.metadata()
    assert (meta["scenario"], meta["seed"], meta["tier"]) == ("bilateral", 4, "novice")
    assert "curriculum" not in meta


def test_auto_curriculum_promotes_on_the_agents_own_scores() -> None:
    session = TrainingSession()
    window = None
    tiers = []
    for seed in range(45):
        obs = session.reset(scenario="bilateral", seed=seed, curriculum="auto")
        window = session.metadata()["curriculum"]["window"]
        tiers.append(session.tier)
        _finish(session, obs)  # the expert scores ~0.9 on bilateral: above promote_at
    assert window == 20
    assert tiers[0] == "novice" and tiers[19] == "novice"
    assert tiers[20] == "apprentice" and tiers[40] == "practitioner"
    meta = session.metadata()["curriculum"]
    assert meta["mode"] == "auto" and meta["episodes_in_window"] == 5


def test_a_losing_agent_stays_at_its_tier() -> None:
    session = TrainingSession()
    for seed in range(25):
        obs = session.reset(scenario="bilateral", seed=seed, curriculum="auto")
        _finish(session, obs, policy="do_nothing")
    assert session.tier == "novice" and session.metadata()["curriculum"]["rolling_mean"] == 0.0


def test_an_unfinished_episode_is_not_scored_and_counts_once() -> None:
    session = TrainingSession()
    session.reset(scenario="bilateral", seed=1, curriculum="auto")
    session.reset(scenario="bilateral", seed=2, curriculum="auto")  # abandoned: not recorded
    assert session.curriculum is not None and len(session.curriculum.scores) == 0
    obs = session.reset(scenario="bilateral", seed=3, curriculum="auto")
    _finish(session, obs)
    session.reset(scenario="bilateral", seed=4, curriculum="auto")
    assert len(session.curriculum.scores) == 1


def test_seed_none_draws_a_reproducible_seed() -> None:
    session = TrainingSession()
    first = session.reset(scenario="easy_negotiation")
    seed = session.metadata()["seed"]
    assert isinstance(seed, int)
    again = TrainingSession().reset(scenario="easy_negotiation", seed=seed)
    assert again.to_dict() == first.to_dict()


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"scenario": "nope"}, "Unknown scenario"),
        ({"scenario": "llm_bilateral"}, "Unknown scenario"),  # needs a model: not offered
        ({"tier": "grandmaster"}, "Unknown tier"),
        ({"curriculum": "manual"}, "Unknown curriculum"),
        ({"seed": -3}, "seed"),
        ({"seed": "7"}, "seed"),
        ({"seed": MAX_SEED + 1}, f"seed must be a whole number from 0 to {MAX_SEED}"),
        ({"seed": 10**5000}, f"seed must be a whole number from 0 to {MAX_SEED}"),
    ],
)
def test_bad_resets_are_refused_and_leave_the_session_usable(kwargs, match) -> None:
    session = TrainingSession()
    session.reset(scenario="bilateral", seed=1)
    with pytest.raises(SessionError, match=match):
        session.reset(**kwargs)
    assert session.metadata()["seed"] == 1  # the running episode is untouched
    assert session.step({"action_type": "defer"}).info["valid"]


def test_step_before_reset_is_a_clear_error() -> None:
    with pytest.raises(SessionError, match="reset"):
        TrainingSession().step({"action_type": "defer"})
