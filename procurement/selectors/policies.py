"""Reads for policy configs."""

from __future__ import annotations

from procurement.models import PolicyConfig


def policy_by_name(*, name: str) -> PolicyConfig | None:
    return PolicyConfig.objects.filter(name=name).first()
