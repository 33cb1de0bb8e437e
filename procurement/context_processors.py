"""What every page's template knows beyond the view's own context."""

from __future__ import annotations

from django.http import HttpRequest

from procurement.roles import user_role


def viewer_role(request: HttpRequest) -> dict:
    """The signed-in user's role (None: none yet): the header names it on every page and
    offers only the links it can open."""
    return {"role": user_role(request.user)}
