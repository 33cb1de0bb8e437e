"""The server's world key and the one builder of a stored episode's engine."""

from __future__ import annotations

import pytest

from negotiation import ProcurementEnv, load_scenario
from procurement.models import Episode
from procurement.worlds import episode_env, server_world_key


def test_the_world_key_is_configured_or_derived_from_the_secret_key(settings):
    settings.WORLD_KEY = ""
    settings.SECRET_KEY = "one secret key, long enough for the checks of the settings"
    derived = server_world_key()
    assert len(derived) == 32 and settings.SECRET_KEY.encode() not in derived
    settings.SECRET_KEY = "another secret key, long enough for the checks of settings"
    assert server_world_key() != derived
    settings.WORLD_KEY = "a configured world key"
    assert server_world_key() == b"a configured world key"


@pytest.mark.parametrize("sealed", [False, True])
def test_a_stored_episode_is_rebuilt_in_its_own_world(settings, sealed):
    settings.WORLD_KEY = "the test server's world key"
    config = load_scenario("easy_negotiation").model_dump(mode="json")
    episode = Episode(scenario_snapshot=config, policy_snapshot={}, seed=3, sealed=sealed)
    expected = ProcurementEnv(config, world_key=server_world_key() if sealed else None)
    assert episode_env(episode).observation().to_dict() == expected.reset(seed=3).to_dict()
