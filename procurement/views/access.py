"""What every page shares: the role a page needs, and service errors shown on a form."""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import TypeVar

from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from procurement.errors import ApplicationError
from procurement.roles import CAPABILITIES, Role, has_role, user_role

T = TypeVar("T")


def add_service_errors(form, exc: ValidationError) -> None:
    """A service's field errors onto the form's fields (or the form, for other keys)."""
    for field, messages in exc.message_dict.items():
        for message in messages:
            form.add_error(field if field in form.fields else None, message)


def call_service(form, service: Callable[[], T]) -> T | None:
    """Run a start/create service for a valid form: its refusals (a quota, field errors)
    land on the form and give None, so the page shows them instead of a 500."""
    try:
        return service()
    except ApplicationError as exc:
        form.add_error(None, exc.message)
    except ValidationError as exc:
        add_service_errors(form, exc)
    return None


def role_required(minimum: Role) -> Callable:
    """A page for ``minimum`` and above. No role at all: a page that says so and nothing
    else; a lower role: a 403 that names the role needed."""

    def decorate(view: Callable) -> Callable:
        @wraps(view)
        def wrapped(request: HttpRequest, *args, **kwargs) -> HttpResponse:
            role = user_role(request.user)
            if role is None or not has_role(request.user, minimum):
                context = {"role": role, "needed": minimum, "capability": CAPABILITIES.get(role)}
                return render(request, "procurement/no_role.html", context, status=403)
            return view(request, *args, **kwargs)

        return wrapped

    return decorate
