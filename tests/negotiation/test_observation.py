"""Observations are values: each describes its own step forever, and nothing done to
one reaches the world (issue 10)."""

from __future__ import annotations

import copy
import json
import pickle

import pytest

from negotiation import EnvNotResetError, ProcurementEnv, get_policy, load_scenario


def _play(preset: str, seed: int, steps: int) -> tuple[ProcurementEnv, list]:
    env = ProcurementEnv(load_scenario(preset))
    policy = get_policy("expert", seed=seed)
    obs = env.reset(seed=seed)
    kept = [obs]
    for _ in range(steps):
        if obs.done:
            break
        obs = env.step(policy.act(obs)).observation
        kept.append(obs)
    return env, kept


def test_a_kept_observation_still_describes_its_own_step() -> None:
    _, kept = _play("medium_adversarial", 3, 40)
    # Replay the same episode, serialising each observation at its own time.
    env2 = ProcurementEnv(load_scenario("medium_adversarial"))
    policy = get_policy("expert", seed=3)
    obs = env2.reset(seed=3)
    at_the_time = [json.dumps(obs.to_dict())]
    for _ in range(len(kept) - 1):
        obs = env2.step(policy.act(obs)).observation
        at_the_time.append(json.dumps(obs.to_dict()))
    # Read long after the episode moved on: identical to what it said at its step.
    assert [json.dumps(o.to_dict()) for o in kept] == at_the_time
    weeks = [o.week for o in kept]
    assert weeks[0] == 0 and weeks[-1] > 0
    first = kept[0]
    assert all(r.status == "open" for r in first.requirements)
    assert first.to_dict()["week"] == 0 and first.step == 0


def test_nothing_done_to_an_observation_reaches_the_world() -> None:
    env = ProcurementEnv(load_scenario("medium_adversarial"))
    obs = env.reset(seed=5)
    before = json.dumps(env.observation().to_dict())
    r, s = obs.requirements[0], obs.suppliers[0]
    with pytest.raises(AttributeError):
        r.status = "fulfilled"  # the exploit: it ended an episode with score 0.6
    with pytest.raises(AttributeError):
        obs.budget_remaining = 1e9
    with pytest.raises(TypeError):
        s.list_prices[r.id] = 0.01
    with pytest.raises(TypeError):
        s.capacity[r.category] = 10**6
    with pytest.raises(TypeError):
        obs.threads[("x", "y")] = None
    with pytest.raises((TypeError, AttributeError)):
        obs.requirements.append(r)
    # Copies are the caller's own; changing them leaves the world alone.
    mine = obs.to_dict()
    mine["requirements"][0]["status"] = "fulfilled"
    mine["budget"]["remaining"] = 0
    deep = copy.deepcopy(obs)
    assert deep == obs
    assert json.dumps(env.observation().to_dict()) == before
    result = env.step({"action_type": "defer"})
    assert result.observation.requirements[0].status == "open"
    assert env.score().score < 0.6


def test_observations_are_equal_values_and_pickle() -> None:
    _, kept = _play("bilateral", 2, 3)
    again = pickle.loads(pickle.dumps(kept[-1]))
    assert again == kept[-1] and again.to_dict() == kept[-1].to_dict()
    _, kept2 = _play("bilateral", 2, 3)
    assert [o.to_dict() for o in kept2] == [o.to_dict() for o in kept]


def test_unchanged_records_are_shared_between_steps() -> None:
    env = ProcurementEnv(load_scenario("medium_adversarial"))
    obs = env.reset(seed=1)
    r = obs.requirements[0]
    s = next(x for x in obs.suppliers if r.id in x.list_prices)
    nxt = env.step(
        {"action_type": "negotiate", "supplier_id": s.id, "requirement_id": r.id, "price": 1.0}
    ).observation
    assert nxt.requirements[0] is r  # untouched by the offer: the same record
    assert nxt.thread(s.id, r.id) is not None and obs.thread(s.id, r.id) is None


def test_step_before_reset_is_a_clear_error() -> None:
    env = ProcurementEnv(load_scenario("easy_negotiation"))
    with pytest.raises(EnvNotResetError, match="reset"):
        env.step({"action_type": "defer"})
    with pytest.raises(EnvNotResetError, match="reset"):
        env.observation()


def test_reset_without_a_seed_draws_one_and_reports_it() -> None:
    env = ProcurementEnv(load_scenario("easy_negotiation"))
    seeds = {env.reset().seed for _ in range(5)}
    assert len(seeds) > 1 and all(isinstance(x, int) and x >= 0 for x in seeds)
    obs = env.reset()
    assert obs.seed == env.seed
    replay = ProcurementEnv(load_scenario("easy_negotiation")).reset(seed=obs.seed)
    assert replay.to_dict() == obs.to_dict()


@pytest.mark.parametrize("seed", [-1, 1.5, "3", True])
def test_reset_refuses_a_bad_seed(seed: object) -> None:
    env = ProcurementEnv(load_scenario("easy_negotiation"))
    with pytest.raises(ValueError, match="seed"):
        env.reset(seed=seed)  # type: ignore[arg-type]
    with pytest.raises(EnvNotResetError):
        env.step({"action_type": "defer"})


def test_reset_refuses_unknown_options() -> None:
    env = ProcurementEnv(load_scenario("easy_negotiation"))
    with pytest.raises(ValueError, match="tier"):
        env.reset(seed=1, options={"tier": "novice"})
