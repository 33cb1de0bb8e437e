"""Roles are Django groups, ordered: analyst < ops < admin (superusers are admins).

Who answers an escalation is the scenario's (``escalation_approver_role``, never the
run's starter): procurement.services.approvals."""

from __future__ import annotations

from typing import get_args

from negotiation.config import ApproverRole as Role

ROLES: tuple[Role, ...] = get_args(Role)  # lowest first
CAPABILITIES = {
    "analyst": "read everything, run single episodes, take the buyer's seat",
    "ops": "analyst + run and cancel sweeps",
    "admin": "ops + create and edit scenarios and policies",
}


def user_role(user) -> Role | None:
    """The highest role the user holds, or None."""
    if not getattr(user, "is_authenticated", False):
        return None
    if user.is_superuser:
        return "admin"
    if not hasattr(user, "_arena_role"):  # one query per request, not per check
        names = set(user.groups.values_list("name", flat=True)) if user.pk else set()
        held = [r for r in ROLES if r in names]
        user._arena_role = held[-1] if held else None
    return user._arena_role


def has_role(user, minimum: Role) -> bool:
    role = user_role(user)
    return role is not None and ROLES.index(role) >= ROLES.index(minimum)


def may_cancel_episode(user, episode) -> bool:
    """Ops and admins cancel any episode; an analyst only the ones they started."""
    return has_role(user, "ops") or (has_role(user, "analyst") and episode.created_by_id == user.pk)
