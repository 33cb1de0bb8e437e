from __future__ import annotations

import pytest
from pydantic import BaseModel

from negotiation import ScenarioConfig, ScenarioValidationError, list_presets, load_scenario
from negotiation.config import (
    HIDDEN_VALUE,
    parameter_docs,
    scenario_currency,
    scrub_hidden_settings,
    validate_config,
)
from negotiation.world.catalogue import get_catalogue


def test_presets_load_and_round_trip():
    names = list_presets()
    for required in ("easy_negotiation", "medium_adversarial", "hard_arena", "bilateral"):
        assert required in names
    for name in names:
        cfg = load_scenario(name)
        assert isinstance(cfg, ScenarioConfig)
        again = load_scenario(cfg.model_dump(mode="json"))
        assert again == cfg
        assert load_scenario(cfg) is cfg


def test_preset_shapes_match_design():
    easy = load_scenario("easy_negotiation")
    assert (easy.n_suppliers, easy.n_requirements, easy.weeks) == (5, 3, 4)
    assert easy.rival_aggression == 0 and not easy.disruptions and easy.disruption_rate == 0
    med = load_scenario("medium_adversarial")
    assert (med.n_suppliers, med.n_requirements, med.weeks, med.rival_aggression) == (12, 6, 8, 0.4)
    assert (
        med.persona_mix["deceptive"] > 0 and med.persona_mix["distressed"] > 0 and med.disruptions
    )
    hard = load_scenario("hard_arena")
    assert (hard.n_suppliers, hard.n_requirements, hard.weeks) == (20, 12, 12)
    assert (
        len(hard.disruptions) >= 3 and hard.budget_tightness >= 0.7 and hard.rival_aggression >= 0.7
    )


def test_bilateral_overrides():
    cfg = load_scenario("bilateral", item="laptop_business_14", persona="deceptive", max_rounds=10)
    assert cfg.bilateral_item == "laptop_business_14"
    assert cfg.bilateral_persona == "deceptive"
    assert cfg.actions_per_week >= 12


@pytest.mark.parametrize(
    "patch, field",
    [
        ({"weeks": 0}, "weeks"),
        ({"budget_tightness": 1.5}, "budget_tightness"),
        ({"n_suppliers": "many"}, "n_suppliers"),
        ({"bogus": 1}, "bogus"),
        ({"persona_mix": {"angry": 1.0}}, "persona_mix.angry"),
        ({"persona_mix": {"cooperative": 0.0}}, "persona_mix"),
        ({"disruptions": [{"week": 99, "kind": "budget_cut"}]}, "disruptions.0.week"),
        ({"disruptions": [{"week": 2, "kind": "meteor"}]}, "disruptions.0.kind"),
        ({"max_steps": 2}, "max_steps"),
        ({"pr_threshold": float("nan")}, "pr_threshold"),
        ({"escalation_approver_role": "intern"}, "escalation_approver_role"),
        ({"escalation_approval_above": -1.0}, "escalation_approval_above"),
        ({"escalation_approval_above": float("inf")}, "escalation_approval_above"),
    ],
)
def test_validation_errors_name_fields(patch, field):
    data = load_scenario("medium_adversarial").model_dump(mode="json")
    data.update(patch)
    with pytest.raises(ScenarioValidationError) as ei:
        load_scenario(data)
    err = ei.value
    assert isinstance(err, ValueError)
    assert any(e["field"] == field for e in err.errors), err.errors
    assert all(e["message"] for e in err.errors)
    assert field.split(".")[0] in str(err)


def test_bilateral_cross_checks():
    with pytest.raises(ScenarioValidationError) as ei:
        load_scenario("bilateral", item="no_such_item", bilateral_cost_factor=2.0)
    fields = {e["field"] for e in ei.value.errors}
    assert {"bilateral_item", "bilateral_cost_factor"} <= fields


def test_unknown_preset_and_bad_type():
    with pytest.raises(ScenarioValidationError) as ei:
        load_scenario("nope")
    assert ei.value.errors[0]["field"] == "name"
    with pytest.raises(ScenarioValidationError):
        load_scenario(42)  # type: ignore[arg-type]


def _mutable_parts(value: object) -> list[object]:
    """Every dict and list reachable from a preset value (models by their fields)."""
    if isinstance(value, dict):
        return [value, *(p for v in value.values() for p in _mutable_parts(v))]
    if isinstance(value, list):
        return [value, *(p for v in value for p in _mutable_parts(v))]
    if isinstance(value, BaseModel):
        return [p for v in vars(value).values() for p in _mutable_parts(v)]
    return []


def test_loaded_presets_share_nothing_mutable_with_presets():
    # load_scenario copies a preset shallowly and relies on validation to build every
    # nested value anew: a config edited in place must reach neither PRESETS nor later loads.
    from negotiation.scenarios import PRESETS

    for name in list_presets():
        stored = {id(p) for v in PRESETS[name].values() for p in _mutable_parts(v)}
        cfg = load_scenario(name)
        assert not stored & {id(p) for v in vars(cfg).values() for p in _mutable_parts(v)}
        before = load_scenario(name).model_dump()
        cfg.persona_mix["cooperative"] = 123.0
        cfg.persona_mix.clear()
        for d in cfg.disruptions:
            d.week = 99
        cfg.disruptions.clear()
        if cfg.supplier_llm is not None:
            cfg.supplier_llm.personas.append("cooperative")
        assert load_scenario(name).model_dump() == before
    overridden = load_scenario("bilateral", persona="deceptive")
    assert load_scenario("bilateral").persona_mix == {"hardball": 1.0}
    assert overridden.persona_mix == {"deceptive": 1.0}


def test_a_stored_config_with_one_escalation_fraction_keeps_it_as_the_middle():
    cfg = validate_config({"escalation_fraction": 0.5})  # as stored before the range
    assert cfg.escalation_range == (0.4, 0.6)
    assert validate_config({"escalation_fraction": 0.02}).escalation_range == (0.0, 0.12)


def test_an_escalation_range_too_narrow_to_hide_the_floor_is_refused():
    with pytest.raises(ScenarioValidationError) as exc:
        validate_config({"escalation_fraction_spread": 0.0})
    assert exc.value.errors[0]["field"] == "escalation_fraction_spread"


def test_scrubbing_hides_each_named_suppliers_persona_and_nothing_else():
    category = get_catalogue().categories[0]
    roster = [{"name": "Acme", "persona": "deceptive", "categories": [category]}]
    config = validate_config({"n_suppliers": 3, "supplier_roster": roster}).model_dump(mode="json")
    scrubbed = scrub_hidden_settings(config)
    assert scrubbed["supplier_roster"][0]["persona"] == HIDDEN_VALUE
    assert config["supplier_roster"][0]["persona"] == "deceptive"  # the input is untouched
    assert {k: v for k, v in scrubbed.items() if k != "supplier_roster"} == {
        k: v for k, v in config.items() if k != "supplier_roster"
    }
    assert scrub_hidden_settings({"supplier_roster": ["odd", 3]}) == {"supplier_roster": ["odd", 3]}


def test_stored_configs_without_the_approval_thresholds_keep_working():
    stored = load_scenario("easy_negotiation").model_dump(mode="json")
    for name in ("escalation_approver_role", "escalation_approval_above"):
        del stored[name]
    cfg = load_scenario(stored)
    assert (cfg.escalation_approver_role, cfg.escalation_approval_above) == ("ops", 0.0)
    units = ScenarioConfig.model_fields["escalation_approval_above"].description
    assert "scenario's money" in units and "standing counter x the quantity" in units


def test_a_scenario_declares_its_currency_once_and_money_parameters_read_in_it():
    # Before: no currency anywhere on the pages; thresholds read as bare numbers.
    assert ScenarioConfig().currency == "USD"  # the shipped catalogue's prices
    assert load_scenario("easy_negotiation", currency="EUR").currency == "EUR"
    with pytest.raises(ScenarioValidationError):
        load_scenario("easy_negotiation", currency="euro")
    stored = load_scenario("easy_negotiation").model_dump(mode="json")
    del stored["currency"]  # a config stored before the field
    assert scenario_currency(stored) == "USD" and load_scenario(stored).currency == "USD"
    assert scenario_currency({"currency": "CHF"}) == "CHF"
    docs = {d.name: d for d in parameter_docs()}
    assert docs["pr_threshold"].show(50_000.0, "EUR") == "50,000 EUR"
    assert docs["escalation_approval_above"].show(0.0) == "0 USD"
    assert docs["weeks"].show(6, "EUR") == "6 weeks"  # not money
    assert docs["currency"].show("EUR") == "EUR"
