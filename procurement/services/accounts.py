"""Users and roles (Django groups analyst, ops, admin)."""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from contextlib import contextmanager

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group, Permission
from django.contrib.auth.password_validation import validate_password
from django.core.exceptions import ValidationError
from django.db import transaction

from procurement.roles import ROLES, Role

ADMIN_MODELS = ("scenario", "policyconfig", "requirementtemplate", "supplierprofile")
VIEW_MODELS = ("episode", "decision", "sweep", "sweepcell", "evaluation", "trainingrun")
# Admins lift login lockouts (docs/operations.md): they see django-axes' access attempts in
# the admin and delete the one that locks an account out.
LOCKOUT_PERMISSIONS = ("view_accessattempt", "delete_accessattempt")


def role_groups_ensure() -> dict[str, Group]:
    """Create the role groups; admins get the admin-site permissions they need."""
    groups = {role: Group.objects.get_or_create(name=role)[0] for role in ROLES}
    perms = Permission.objects.filter(content_type__app_label="procurement")
    admin_perms = [
        p
        for p in perms
        if p.content_type.model in ADMIN_MODELS
        or (p.content_type.model in VIEW_MODELS and p.codename.startswith("view_"))
    ]
    lockouts = Permission.objects.filter(
        content_type__app_label="axes", codename__in=LOCKOUT_PERMISSIONS
    )
    groups["admin"].permissions.set([*admin_perms, *lockouts])
    return groups


@contextmanager
def _errors_on(field: str) -> Iterator[None]:
    """Report a validator's errors under ``field``, as forms and serializers do."""
    try:
        yield
    except ValidationError as exc:
        raise ValidationError({field: exc.messages}) from None


@transaction.atomic
def user_create(*, username: str, role: Role | None, password: str | None = None, email: str = ""):
    """Create (or re-role) a user; ``role=None`` leaves them without one (they can sign in
    and see nothing until an admin gives one). Returns (user, password or None when
    unchanged).

    A given password must pass AUTH_PASSWORD_VALIDATORS; a generated one always does.
    """
    if role is not None and role not in ROLES:
        raise ValidationError({"role": [f"Unknown role '{role}'; use one of {', '.join(ROLES)}."]})
    if not username or len(username) > 150:
        raise ValidationError({"username": ["A username of 1 to 150 characters is required."]})
    user_model = get_user_model()
    with _errors_on("username"):
        for validator in user_model._meta.get_field(user_model.USERNAME_FIELD).validators:
            validator(username)
    existing = user_model.objects.filter(username=username).first()
    if password:
        with _errors_on("password"):  # similarity is checked against the user's own fields
            validate_password(password, user=existing or user_model(username=username, email=email))
    groups = role_groups_ensure()
    user, created = user_model.objects.get_or_create(username=username, defaults={"email": email})
    if created or password:
        password = password or secrets.token_urlsafe(12)
        user.set_password(password)
    user.is_staff = role == "admin"  # admins use the Django admin
    user.save()
    user.groups.remove(*[g for r, g in groups.items() if r != role])
    if role is not None:
        user.groups.add(groups[role])
    return user, (password if created or password else None)
