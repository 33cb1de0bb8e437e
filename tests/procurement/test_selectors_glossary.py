"""What the pages' numbers mean (procurement/selectors/glossary.py) and the glossary page:
units drawn from the episode's own world, tooltips from the engine's METRIC_DOCS."""

from __future__ import annotations

import pytest
from django.utils.html import escape

from negotiation.config import human_number
from negotiation.metrics import METRIC_DOCS
from negotiation.world.catalogue import get_catalogue
from procurement.selectors.glossary import episode_units, metric_entry, requirement_units
from procurement.services.episode_runner import episode_run
from procurement.services.episodes import episode_create
from procurement.worlds import episode_env

pytestmark = pytest.mark.django_db


def test_an_episode_labels_its_figures_in_its_scenario_currency_and_item_units(
    preset, expert
) -> None:
    episode = episode_create(scenario=preset, policy=expert, seed=4, enqueue=False)
    units = episode_units(episode)
    assert units["currency"] == "USD"
    assert units["figures"]["price"] == {"label": "Price / unit", "unit": "{currency} / {unit}"}
    catalogue_units = {i.unit for i in get_catalogue().items}
    found = requirement_units(episode)
    assert found and set(found.values()) <= catalogue_units
    # The same world the run plays: its first observation names the same units.
    world = episode_env(episode).world
    assert found == {r.id: r.unit for r in world.requirements}


def test_a_stored_scenario_in_another_currency_says_so(preset, expert) -> None:
    episode = episode_create(scenario=preset, policy=expert, seed=4, enqueue=False)
    episode.scenario_snapshot = {**episode.scenario_snapshot, "currency": "EUR"}
    assert episode_units(episode)["currency"] == "EUR"
    assert metric_entry("spend", "EUR")["unit"] == "EUR"


def test_a_metric_tooltip_says_meaning_unit_and_direction() -> None:
    entry = metric_entry("mutual_loss")
    assert entry["label"] == "Mutual loss"
    assert entry["title"].startswith(METRIC_DOCS["mutual_loss"].meaning)
    assert entry["title"].endswith("(share, 0 to 1; lower is better)")
    assert metric_entry("contracts")["title"].endswith("(count)")


def test_the_glossary_page_explains_every_metric(client, user_with_role, seeded) -> None:
    client.force_login(user_with_role("analyst"))
    body = client.get("/glossary/").content.decode()
    for name, doc in METRIC_DOCS.items():
        assert f'id="metric-{name}"' in body and doc.label in body, name
    assert "Price / unit" in body and "USD / item unit" in body
    assert "Unit: share, 0 to 1; lower is better." in body  # mutual loss
    assert client.get("/").content.decode().count('class="metric"') >= 4  # leaderboard heads


def test_the_scenario_page_shows_its_currency_and_money_in_it(
    client, user_with_role, preset
) -> None:
    client.force_login(user_with_role("analyst"))
    body = client.get(f"/scenarios/{preset.pk}/").content.decode()
    assert "<code>currency</code>" in body and "USD" in body
    threshold = human_number(preset.engine_config().get("pr_threshold", 50_000.0))
    assert f"{threshold} USD" in body  # pr_threshold, in the scenario's money


def test_the_compare_page_names_metrics_with_their_glossary_entry(
    client, user_with_role, preset, expert
) -> None:
    runs = [
        episode_run(
            episode_id=episode_create(scenario=preset, policy=expert, seed=s, enqueue=False).pk,
            live_updates=False,
        )
        for s in (1, 2)
    ]
    client.force_login(user_with_role("analyst"))
    body = client.get(f"/episodes/compare/?a={runs[0].pk}&b={runs[1].pk}").content.decode()
    entry = metric_entry("mutual_loss")
    assert f'data-metric="mutual_loss" title="{escape(entry["title"])}">Mutual loss</abbr>' in body
