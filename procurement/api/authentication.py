"""HTTP Basic auth that answers a lockout with 429 and Retry-After.

DRF's BasicAuthentication already reports each failure to axes (``authenticate`` sends
``user_login_failed``), and axes refuses locked-out credentials; but DRF would answer both
with the same 401 as a mistyped password. A locked-out client is told so, and for how long:
axes' cool-off, or the rest of the minute when its address used up its budget of failed
checks (procurement.login_budget).
"""

from __future__ import annotations

from axes.helpers import get_cool_off, get_lockout_message
from drf_spectacular.authentication import BasicScheme
from rest_framework import exceptions
from rest_framework.authentication import BasicAuthentication

from procurement.login_budget import refusal_wait

BUDGET_MESSAGE = "Too many failed logins from your address; try again in {wait} seconds."


class LockoutBasicAuthentication(BasicAuthentication):
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
