"""HTTP Basic auth that answers a lockout with 429 and Retry-After, and refuses web pages
of other sites.

DRF's BasicAuthentication already reports each failure to axes (``authenticate`` sends
``user_login_failed``), and axes refuses locked-out credentials; but DRF would answer both
with the same 401 as a mistyped password. A locked-out client is told so, and for how long:
axes' cool-off, or until its address has a failed check to spare again
(procurement.login_budget).

A browser that once answered the Basic challenge sends those credentials with every
request to the site, a form another site posts included, so Basic credentials are as
ambient as a session cookie. An unsafe request that carries them from a web page (it has
an Origin header) must therefore come from this site, as Django's CSRF check requires of
sessions; a mismatch is a 403, refused before any password is checked. Clients that are
not browsers send no Origin and are not affected. (Dropping the challenge for browsers
would not do: credentials a browser already holds are sent whatever the site answers.)
"""

from __future__ import annotations

from axes.helpers import get_cool_off, get_lockout_message
from drf_spectacular.authentication import BasicScheme
from rest_framework import exceptions
from rest_framework.authentication import BasicAuthentication, get_authorization_header
from rest_framework.permissions import SAFE_METHODS

from procurement.login_budget import refusal_wait
from procurement.origins import trusted_origin

BUDGET_MESSAGE = "Too many failed logins from your address; try again in {wait} seconds."


class LockoutBasicAuthentication(BasicAuthentication):
    def authenticate(self, request):
        if (
            request.method not in SAFE_METHODS
            and "HTTP_ORIGIN" in request.META
            and get_authorization_header(request)[:6].lower() == b"basic "
            and not trusted_origin(request._request)
        ):
            origin = request.META["HTTP_ORIGIN"]
            raise exceptions.PermissionDenied(
                f"Origin checking failed: {origin} is not this site, and Basic credentials "
                "from a web page are only taken from this site (or CSRF_TRUSTED_ORIGINS)."
            )
        return super().authenticate(request)

    def authenticate_credentials(self, userid, password, request=None):
        try:
            return super().authenticate_credentials(userid, password, request)
        except exceptions.AuthenticationFailed:
            wait = refusal_wait(request)
            if wait is not None:  # the address's budget of failed checks is spent
                raise exceptions.Throttled(
                    wait=wait, detail=BUDGET_MESSAGE.format(wait=wait)
                ) from None
            if getattr(request, "axes_locked_out", False):  # set by axes on this request
                cool_off = get_cool_off(request)
                raise exceptions.Throttled(
                    wait=cool_off.total_seconds() if cool_off else None,
                    detail=str(get_lockout_message()),
                ) from None
            raise


class LockoutBasicScheme(BasicScheme):
    """The OpenAPI schema documents it as plain HTTP Basic (registered on import)."""

    target_class = LockoutBasicAuthentication
