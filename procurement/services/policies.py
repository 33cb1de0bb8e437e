"""Writes for policy configs: params are checked against the policy's own schema when
they are saved, so a bad value is a 400 / form error, never a run that fails later.

``version`` grows only when what the policy plays changes (policy, params, backend,
model), the way a scenario's does; sweeps pin the version they were created with.
"""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError
from django.db import transaction

from procurement.models import PolicyConfig
from procurement.services.protection import delete_unreferenced

RUN_FIELDS = ("policy", "params", "backend", "model")  # what makes a policy play differently
EDITABLE_FIELDS = (*RUN_FIELDS, "description")  # the name is fixed: results refer to it


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
    config.full_clean()  # field checks, unique name, and the validators (clean())
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
