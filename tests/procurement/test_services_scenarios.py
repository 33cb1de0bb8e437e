"""Scenario services: seeding presets, copying, validated updates, read-only presets."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError

from negotiation import list_policies, list_presets, load_scenario
from procurement.models import PolicyConfig, RequirementTemplate, Scenario
from procurement.services import scenarios as svc


@pytest.mark.django_db
def test_seed_presets_loads_every_engine_preset_with_its_config(seeded) -> None:
    presets = Scenario.objects.filter(is_preset=True)
    assert sorted(presets.values_list("preset_name", flat=True)) == sorted(list_presets())
    for scenario in presets:
        engine = load_scenario(scenario.preset_name).model_dump(mode="json")
        assert {k: v for k, v in scenario.config.items() if k != "name"} == {
            k: v for k, v in engine.items() if k != "name"
        }
        assert scenario.version == 1
        # what the engine runs is a valid config named after the scenario
        assert load_scenario(scenario.engine_config()).name == scenario.name
    policies = {p.name: p for p in PolicyConfig.objects.all()}
    assert set(policies) >= set(list_policies()) - {"llm"}  # "llm" needs a model: below
    assert not policies["expert"].uses_llm
    for name in svc.BUILT_IN_LLM_POLICIES:
        llm = policies[name]
        assert (llm.policy, llm.backend, llm.model) == ("llm", "transformers", "smollm2")
        assert llm.uses_llm
    assert RequirementTemplate.objects.exists()


@pytest.mark.django_db
def test_seed_presets_is_idempotent() -> None:
    first = svc.presets_seed()
    assert first["scenarios_created"] == len(list_presets())
    state = (
        list(Scenario.objects.values_list("name", "version", "config").order_by("name")),
        PolicyConfig.objects.count(),
        RequirementTemplate.objects.count(),
    )
    second = svc.presets_seed()
    assert second == {"scenarios_created": 0, "scenarios_updated": 0, "templates": 0, "policies": 0}
    assert state == (
        list(Scenario.objects.values_list("name", "version", "config").order_by("name")),
        PolicyConfig.objects.count(),
        RequirementTemplate.objects.count(),
    )


@pytest.mark.django_db
def test_seed_presets_refreshes_a_changed_preset_and_bumps_its_version(preset) -> None:
    Scenario.objects.filter(pk=preset.pk).update(config={**preset.config, "weeks": 99})
    counts = svc.presets_seed()
    assert counts["scenarios_updated"] == 1
    preset.refresh_from_db()
    assert preset.config["weeks"] != 99 and preset.version == 2


@pytest.mark.django_db
def test_create_scenario_validates_with_the_engine(snapshot_counts) -> None:
    before = snapshot_counts()
    with pytest.raises(ValidationError) as err:
        svc.scenario_create(name="bad", config={"weeks": 0, "n_suppliers": "many"})
    assert set(err.value.message_dict) == {"weeks", "n_suppliers"}
    with pytest.raises(ValidationError) as err:
        svc.scenario_create(name="bad", config={"no_such_parameter": 1})
    assert "no_such_parameter" in err.value.message_dict
    with pytest.raises(ValidationError) as err:
        svc.scenario_create(
            name="bad", config={"weeks": 4, "disruptions": [{"week": 9, "kind": "budget_cut"}]}
        )
    assert "disruptions.0.week" in err.value.message_dict
    with pytest.raises(ValidationError) as err:
        svc.scenario_create(name="not a slug!", config={})
    assert "name" in err.value.message_dict
    assert snapshot_counts() == before

    scenario = svc.scenario_create(name="fine", config={"weeks": 5}, description="d")
    assert scenario.config["weeks"] == 5 and scenario.config["name"] == "fine"
    assert scenario.config == load_scenario(scenario.engine_config()).model_dump(mode="json")
    assert scenario.version == 1 and not scenario.is_preset


@pytest.mark.django_db
def test_copy_preset_gives_an_editable_scenario_with_a_fresh_name(preset) -> None:
    copy = svc.scenario_copy(source=preset)
    again = svc.scenario_copy(source=preset)
    assert (copy.name, again.name) == ("easy_negotiation-copy", "easy_negotiation-copy-2")
    assert not copy.is_preset and copy.preset_name == "easy_negotiation"
    params = {k: v for k, v in preset.config.items() if k != "name"}
    assert {k: v for k, v in copy.config.items() if k != "name"} == params
    svc.scenario_update(scenario=copy, config={**copy.config, "weeks": 7})
    preset.refresh_from_db()
    assert preset.config["weeks"] != 7


@pytest.mark.django_db
def test_update_bumps_version_only_on_a_real_change(preset) -> None:
    scenario = svc.scenario_copy(source=preset, name="mine")
    svc.scenario_update(scenario=scenario, config=dict(scenario.config))
    assert scenario.version == 1
    svc.scenario_update(scenario=scenario, description="new words")
    scenario.refresh_from_db()
    assert scenario.version == 1 and scenario.description == "new words"
    # a config equal after validation (defaults spelled out or left out) is no change
    defaults_only = {
        "name": "mine",
        **{
            k: v
            for k, v in scenario.config.items()
            if v != load_scenario({}).model_dump(mode="json")[k]
        },
    }
    svc.scenario_update(scenario=scenario, config=defaults_only)
    assert scenario.version == 1
    svc.scenario_update(
        scenario=scenario, config={**scenario.config, "weeks": scenario.config["weeks"] + 1}
    )
    scenario.refresh_from_db()
    assert scenario.version == 2


@pytest.mark.django_db
def test_invalid_update_changes_nothing(preset) -> None:
    scenario = svc.scenario_copy(source=preset, name="mine")
    stored = dict(scenario.config)
    with pytest.raises(ValidationError) as err:
        svc.scenario_update(scenario=scenario, config={**stored, "weeks": -1})
    assert "weeks" in err.value.message_dict
    scenario.refresh_from_db()
    assert scenario.config == stored and scenario.version == 1


@pytest.mark.django_db
def test_presets_are_read_only(preset) -> None:
    with pytest.raises(ValidationError):
        svc.scenario_update(scenario=preset, config={**preset.config, "weeks": 2})
    with pytest.raises(ValidationError):
        svc.scenario_update(scenario=preset, description="changed")
    with pytest.raises(ValidationError):
        svc.scenario_delete(scenario=preset)
    preset.refresh_from_db()
    assert preset.version == 1 and Scenario.objects.filter(pk=preset.pk).exists()
