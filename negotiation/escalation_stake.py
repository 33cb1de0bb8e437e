"""The money an escalation puts at stake, for the service that asks a person to approve it.

Read off the Observation by the engine's own precondition check (``check_escalate`` on
``PublicWorld``), so the stake names what the escalation would really do:
- a pending PR approved ahead of schedule: that PR's amount;
- a management call on a thread: the supplier's standing counter x the requirement's
  quantity still needed (what awarding at the moved counter could commit at most).
None when the engine would refuse the escalation as it stands (nothing to escalate, none
left): there is nothing to approve, and the engine judges the action.
"""

from __future__ import annotations

from typing import Any

from .action_mask import PublicWorld
from .actions import SERVICE_FIELDS, ActionError, check_escalate
from .observation import Observation


def escalation_stake(observation: Observation, action: dict[str, Any]) -> float | None:
    """The amount at stake in ``action`` (an escalate) at ``observation``, or None."""
    added = SERVICE_FIELDS["escalate"]
    asked = {k: v for k, v in action.items() if k not in added}
    try:
        plan = check_escalate(PublicWorld(observation), asked)
    except ActionError:
        return None
    if plan.pr is not None:
        return float(plan.pr.amount)
    return float(plan.thread.counter_price * plan.requirement.quantity_needed)
