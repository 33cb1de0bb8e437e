"""A budget of failed password checks per client address, spent before any hash is made.

django-axes locks an account out per (username, address), so a client that rotates
usernames never trips it, and every guess costs a password hash (PBKDF2: about a quarter
of a second of CPU). This budget is per address alone: once an address has had
``LOGIN_ADDRESS_FAILURE_LIMIT`` failed checks in the last minute, every further login
from it (right or wrong, form, admin or API Basic auth, any username) is refused before a
hash is computed, until the oldest of them is a minute old. The form and the admin answer
with the locked-out page (429), the API with 429 and Retry-After.

Successful checks are free: a script that sends Basic credentials with every request is
not throttled here (the API's per-user rate limits it). IPv6 addresses count per /64, the
block one subscriber usually holds. The address is axes' (``AXES_CLIENT_IP_CALLABLE``,
else REMOTE_ADDR), so a proxy setup that serves axes serves this too.
"""

from __future__ import annotations

import ipaddress
import math
import time
from typing import Any

from axes.helpers import get_client_ip_address
from django.conf import settings
from django.contrib.auth.backends import ModelBackend
from django.core.exceptions import PermissionDenied

from procurement.services import throttle

WINDOW_S = 60  # the budget counts the failures of the last minute
# Set on the request when the budget refused it: the seconds until a check is free again.
WAIT_ATTRIBUTE = "login_budget_wait"


def address_key(request: Any) -> str | None:
    """The budget key of the request's client address (its /64 for IPv6); None unknown."""
    address = get_client_ip_address(request)
    try:
        ip = ipaddress.ip_address(address or "")
    except ValueError:
        return None
    block = ipaddress.ip_network(f"{ip}/64", strict=False) if ip.version == 6 else ip
    return f"login-failures:{block}"


def refusal_wait(request: Any) -> int | None:
    """Seconds to wait when this request's login was refused by the budget, else None."""
    return getattr(request, WAIT_ATTRIBUTE, None)


class BudgetedModelBackend(ModelBackend):
    """Django's ModelBackend behind the address's budget (see the module docstring).

    Placed after axes' backend: a login axes already refuses costs no budget and no hash.
    """

    def authenticate(self, request, username=None, password=None, **kwargs):
        key = address_key(request) if request is not None else None
        if key is None:  # no request (a management command) or no address: nothing to count
            return super().authenticate(request, username, password, **kwargs)
        failures = throttle.events(key, WINDOW_S)
        limit = settings.LOGIN_ADDRESS_FAILURE_LIMIT
        if len(failures) >= limit:
            # until enough of them are a minute old to leave one check
            wait = failures[len(failures) - limit] + WINDOW_S - time.time()
            setattr(request, WAIT_ATTRIBUTE, max(1, math.ceil(wait)))
            # As an axes lockout: axes records nothing more, and its middleware and our
            # Basic authentication answer with their lockout responses.
            request.axes_locked_out = True
            raise PermissionDenied("Too many failed logins from this address.")
        user = super().authenticate(request, username, password, **kwargs)
        if user is None and password is not None:
            throttle.count(key, WINDOW_S)  # a password was checked (or a dummy hash made)
        return user
