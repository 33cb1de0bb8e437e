"""Writes for policy configs: params are checked against the policy's own schema when
they are saved, so a bad value is a 400 / form error, never a run that fails later.

``version`` grows only when what the policy plays changes (policy, params, backend,
model), the way a scenario's does; sweeps pin the version they were created with.
"""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError
from django.db import transaction

from negotiation import list_policies
from negotiation.policies import (
    MEASUREMENT_ONLY,
    PolicyParams,
    PolicyParamsError,
    policy_params_model,
)
from negotiation.policies.params import validate_params
from procurement.models import PolicyConfig
from procurement.models.policy import LLM_POLICY
from procurement.services.protection import delete_unreferenced

RUN_FIELDS = ("policy", "params", "backend", "model")  # what makes a policy play differently
EDITABLE_FIELDS = (*RUN_FIELDS, "description")  # the name is fixed: results refer to it


def known_policies() -> list[str]:
    """Every registered buyer policy (``llm`` included: the engine registers it)."""
    return list_policies()


def params_model(policy: str) -> type[PolicyParams]:
    """The schema of a policy's params."""
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


@transaction.atomic
def policy_create(
    *,
    name: str,
    policy: str,
    params: dict[str, Any] | None = None,
    backend: str = "",
    model: str = "",
    description: str = "",
) -> PolicyConfig:
    config = PolicyConfig(
        name=name,
        policy=policy,
        params={} if params is None else params,
        backend=backend,
        model=model,
        description=description,
    )
    config.full_clean()  # field checks, unique name, and validate_policy_config (clean())
    config.save()
    return config


@transaction.atomic
def policy_update(*, policy_config: PolicyConfig, **changes: Any) -> PolicyConfig:
    """Change a policy config; its version grows only when a RUN_FIELDS value changes."""
    unknown = sorted(set(changes) - set(EDITABLE_FIELDS))
    if unknown:
        raise ValidationError({field: ["Cannot be changed."] for field in unknown})
    # Compare with the stored row: a ModelForm has already written into the instance.
    stored = PolicyConfig.objects.select_for_update().get(pk=policy_config.pk)
    for field, value in changes.items():
        setattr(policy_config, field, value)
    policy_config.name = stored.name
    policy_config.full_clean()
    changed = any(getattr(stored, f) != getattr(policy_config, f) for f in RUN_FIELDS)
    policy_config.version = stored.version + int(changed)
    policy_config.save()
    return policy_config


def policy_delete(*, policy_config: PolicyConfig) -> None:
    """Delete an unused policy config; InUseError when results refer to it."""
    delete_unreferenced(obj=policy_config)
