"""Nothing that results refer to can be deleted from under them.

A scenario or policy used by a sweep or an episode is refused with a clear message
(the API answers 409, the admin shows its "protected" page). Refusing rather than
archiving keeps one meaning of "exists" everywhere; an unused copy can still go.
The models' on_delete=PROTECT is the safety net this check runs in front of.
"""

from __future__ import annotations

from django.db import transaction
from django.db.models import ProtectedError

from procurement.errors import Conflict
from procurement.models import PolicyConfig, Scenario
from procurement.selectors.references import in_use_message


class InUseError(Conflict):
    """A delete refused because sweeps or episodes refer to the object."""


@transaction.atomic
def delete_unreferenced(*, obj: Scenario | PolicyConfig) -> None:
    """Delete ``obj``, or raise InUseError when a result refers to it."""
    message = in_use_message(obj=obj)
    if message:
        raise InUseError(message)
    try:
        obj.delete()
    except ProtectedError:  # a result appeared between the check and the delete
        raise InUseError(in_use_message(obj=obj)) from None
