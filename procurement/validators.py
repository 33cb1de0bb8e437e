"""The rules a stored scenario or policy config must meet, as Django ValidationError keyed
by the field at fault. Models (clean()), services, serializers and the admin's forms all
check through these; they read the engine and nothing of the database."""

from __future__ import annotations

import math
from typing import Any

from django.core.exceptions import ValidationError

from negotiation import ScenarioValidationError, list_policies
from negotiation import load_scenario as engine_load_scenario
from negotiation.policies import (
    MEASUREMENT_ONLY,
    PolicyParams,
    PolicyParamsError,
    policy_params_model,
)
from negotiation.policies.params import validate_params
from procurement.run_plan import LLM_POLICY


def validate_scenario_config(config: Any) -> dict[str, Any]:
    """The engine's validation, as Django ValidationError keyed by parameter name."""
    if not isinstance(config, dict):
        raise ValidationError({"config": ["The config must be a JSON object of parameters."]})
    try:
        return engine_load_scenario(config).model_dump(mode="json")
    except ScenarioValidationError as exc:
        errors: dict[str, list[str]] = {}
        for err in exc.errors:
            field = err["field"] or "config"
            errors.setdefault(field, []).append(err["message"])
        raise ValidationError(errors) from None


def known_policies() -> list[str]:
    registered = list_policies()
    return registered if LLM_POLICY in registered else [*registered, LLM_POLICY]


def params_model(policy: str) -> type[PolicyParams]:
    """The schema of a policy's params. Until the LLM layer registers its policy (with its
    own schema), ``llm`` takes none."""
    if policy == LLM_POLICY and LLM_POLICY not in list_policies():
        return PolicyParams
    return policy_params_model(policy)


def validate_policy_config(*, policy: str, params: Any, backend: str, model: str) -> dict:
    """The validated params, or ValidationError keyed by the field at fault."""
    errors: dict[str, list[str]] = {}
    if policy in MEASUREMENT_ONLY:
        errors["policy"] = [MEASUREMENT_ONLY[policy]]
    elif policy not in known_policies():
        errors["policy"] = [f"Unknown policy; use one of {', '.join(known_policies())}."]
    else:
        try:
            params = validate_params(policy, params_model(policy), params)
        except PolicyParamsError as exc:
            errors["params"] = [
                f"{e['field']}: {e['message']}" if e["field"] else e["message"] for e in exc.errors
            ]
        if policy == LLM_POLICY and not (backend and model):
            errors["backend"] = ["An llm policy needs a backend and a model."]
        elif policy != LLM_POLICY and backend:
            # The runner hands backend and model to the policy, which a rule policy refuses.
            errors["backend"] = [f"'{policy}' is a rule policy: leave the backend empty."]
    if errors:
        raise ValidationError(errors)
    return params


def parse_model_price(text: str) -> tuple[str, tuple[float, float]]:
    """MODEL=IN[:OUT]: money per million tokens in (prompt) and out (completion) for a
    model; OUT defaults to IN. ValueError says what is wrong."""
    model, sep, value = text.partition("=")
    try:
        numbers = [float(p) for p in value.split(":")]
    except ValueError:
        numbers = []
    if not sep or not model.strip() or len(numbers) not in (1, 2):
        raise ValueError(f"'{text}' is not MODEL=IN[:OUT], e.g. smollm2=0.1:0.4.")
    if not all(math.isfinite(n) and n >= 0 for n in numbers):
        raise ValueError(f"prices are numbers >= 0; got {text}.")
    return model.strip(), (numbers[0], numbers[-1])
