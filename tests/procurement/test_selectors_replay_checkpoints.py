"""The replay boards' state of a step, resumed from replay checkpoints: the same answers a
replay from step 0 gives, for a bounded number of replayed actions per request."""

from __future__ import annotations

import random

import pytest

from negotiation import load_scenario
from procurement.models import Episode, EpisodeStatus, PolicyConfig
from procurement.selectors import replay_checkpoints
from procurement.selectors.episodes import (
    episode_decisions,
    public_state_at,
    replayed_observations,
)
from procurement.services import episodes as svc
from procurement.services.episode_runner import episode_run
from procurement.services.scenarios import scenario_create

EVERY = 40  # checkpoints this close keep the test's hundreds of requests cheap


@pytest.fixture
def checkpoints(monkeypatch) -> replay_checkpoints.CheckpointStore:
    store = replay_checkpoints.CheckpointStore()
    monkeypatch.setattr(replay_checkpoints, "STORE", store)
    monkeypatch.setattr(replay_checkpoints, "CHECKPOINT_EVERY", EVERY)
    return store


@pytest.fixture
def long_episode(seeded) -> Episode:
    """A finished random-policy episode of a few hundred steps."""
    config = load_scenario("medium_adversarial", weeks=30, actions_per_week=12, max_steps=2000)
    scenario = scenario_create(name="long-replay", config=config.model_dump(mode="json"))
    policy = PolicyConfig.objects.get(name="random")
    episode = svc.episode_create(scenario=scenario, policy=policy, seed=5, enqueue=False)
    episode_run(episode_id=episode.pk, live_updates=False)
    episode.refresh_from_db()
    assert episode.status == EpisodeStatus.FINISHED, episode.error
    assert episode.steps > 4 * EVERY
    return episode


def _full_replay(episode: Episode) -> list[dict]:
    """Every step's answer as the replay from step 0 gives it (index 0: before step 0)."""
    actions = episode_decisions(episode).values_list("action", flat=True)
    states = [obs.to_dict() for obs in replayed_observations(episode, actions)]
    for after, state in enumerate(states, -1):
        state["after_step"] = after
    return states


@pytest.mark.django_db
def test_every_state_equals_the_full_replay_in_any_order(long_episode, checkpoints) -> None:
    expected = _full_replay(long_episode)
    steps = list(range(-1, long_episode.steps))
    shuffled = random.Random(1).sample(steps, len(steps))
    for step in [*shuffled, *steps]:
        assert public_state_at(long_episode, step) == expected[step + 1], step
    assert checkpoints.size > 0


@pytest.mark.django_db
def test_a_late_step_replays_at_most_one_interval(long_episode, checkpoints) -> None:
    last = long_episode.steps - 1
    public_state_at(long_episode, last)  # cold: replays from step 0, keeping checkpoints
    assert checkpoints.replayed_steps == last + 1
    for step in (last, last - 1, last - EVERY - 3, EVERY, 0):
        before = checkpoints.replayed_steps
        public_state_at(long_episode, step)
        assert checkpoints.replayed_steps - before <= EVERY, step


@pytest.mark.django_db
def test_a_sealed_episode_resumes_only_in_its_own_world(
    long_episode, checkpoints, settings
) -> None:
    public = _full_replay(long_episode)
    last = long_episode.steps - 1
    assert public_state_at(long_episode, last) == public[-1]

    Episode.objects.filter(pk=long_episode.pk).update(sealed=True)
    long_episode.refresh_from_db()
    settings.WORLD_KEY = "first-server-key"
    sealed = _full_replay(long_episode)
    assert sealed[-1] != public[-1]
    assert public_state_at(long_episode, last) == sealed[-1]
    assert public_state_at(long_episode, last - 1) == sealed[-2]

    settings.WORLD_KEY = "second-server-key"
    rekeyed = _full_replay(long_episode)
    assert rekeyed[-1] != sealed[-1]
    assert public_state_at(long_episode, last) == rekeyed[-1]


def test_the_store_keeps_its_byte_bound() -> None:
    store = replay_checkpoints.CheckpointStore(limit=100)
    key = (1, 0, "t", b"")
    for step in range(10):
        store.put(key, step, bytes(30))
    assert store.size <= 100
    assert store.nearest(key, 9) == (9, bytes(30))
    assert store.nearest(key, 5) is None  # the oldest went first


@pytest.mark.django_db
def test_llm_supplier_states_are_replayed_from_the_record_while_it_plays(
    seeded, expert, checkpoints
) -> None:
    # Before: a 409 ("its suppliers are language models") at every step, and empty boards.
    from negotiation import ProcurementEnv, run_episode
    from procurement.models import Scenario
    from procurement.services.scenarios import scenario_copy
    from tests.negotiation.llm.scripted import ScriptedBackend
    from tests.negotiation.suppliers.test_recorded import failing, moody

    # A model that exists nowhere: the boards must not need it (a load would raise).
    scenario = scenario_copy(
        source=Scenario.objects.get(name="medium_adversarial_llm"), name="nowhere"
    )
    scenario.config = {
        **scenario.config,
        "supplier_llm": {**scenario.config["supplier_llm"], "model": "/nonexistent/model"},
    }
    scenario.save(update_fields=["config"])
    episode = svc.episode_create(scenario=scenario, policy=expert, seed=3, enqueue=False)
    played = run_episode(
        episode.scenario_snapshot, "expert", 3, llm_backend=ScriptedBackend(moody, error=failing)
    )
    records = [r.to_dict() for r in played.steps]
    assert {r["supplier_actor"] for r in records} >= {"llm", "fallback:rule"}
    # What the buyer saw at each step, with the scripted model answering again.
    env = ProcurementEnv(
        episode.scenario_snapshot, llm_backend=ScriptedBackend(moody, error=failing)
    )
    expected = [env.reset(seed=3).to_dict()]
    expected += [env.step(r["action"]).observation.to_dict() for r in records]

    attempt = svc.episode_claim(episode=episode)
    half = len(records) // 2
    svc.episode_decisions_append(episode=episode, records=records[:half], attempt=attempt)
    for step in range(-1, half):  # while it plays: the steps stored so far
        assert public_state_at(episode, step) == {**expected[step + 1], "after_step": step}
    svc.episode_decisions_append(episode=episode, records=records[half:], attempt=attempt)
    for step in (half, len(records) - 1):
        assert public_state_at(episode, step) == {**expected[step + 1], "after_step": step}
