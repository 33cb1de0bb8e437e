from __future__ import annotations

from rest_framework.permissions import SAFE_METHODS, BasePermission

from procurement.roles import Role, has_role


class RolePermission(BasePermission):
    """Reads need ``read_role``; writes need the view's ``write_role`` (per action)."""

    read_role: Role = "analyst"
    message = "Your role does not allow this."

    def has_permission(self, request, view) -> bool:
        if request.method in SAFE_METHODS:
            return has_role(request.user, self.read_role)
        write_roles: dict[str, Role] = getattr(view, "write_roles", {})
        role = write_roles.get(getattr(view, "action", ""), getattr(view, "write_role", "admin"))
        return has_role(request.user, role)
