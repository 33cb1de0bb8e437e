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

from typing import Any, NamedTuple

from .action_mask import PublicWorld
from .actions import SERVICE_FIELDS, ActionError, check_escalate
from .observation import Observation


class Stake(NamedTuple):
    amount: float
    subject: str  # what an approver decides on, in words: the PR, or the thread and counter


def escalation_at_stake(observation: Observation, action: dict[str, Any]) -> Stake | None:
    """What ``action`` (an escalate) puts at stake at ``observation``, or None."""
    added = SERVICE_FIELDS["escalate"]
    asked = {k: v for k, v in action.items() if k not in added}
    try:
        plan = check_escalate(PublicWorld(observation), asked)
    except ActionError:
        return None
    r = plan.requirement
    if plan.pr is not None:
        pr = plan.pr
        subject = (
            f"approve {pr.id} for {r.id} ({r.name}): {pr.amount:,.2f}, raised in week "
            f"{pr.raised_week}, due to mature in week {pr.matures_week}"
        )
        return Stake(float(pr.amount), subject)
    counter, needed = plan.thread.counter_price, r.quantity_needed
    subject = (
        f"a management call on {plan.supplier.id}'s standing counter for {r.id} ({r.name}): "
        f"{counter:,.2f} per {r.unit} x {needed} {r.unit} still needed"
    )
    return Stake(float(counter * needed), subject)


def escalation_stake(observation: Observation, action: dict[str, Any]) -> float | None:
    """The amount at stake in ``action`` (an escalate) at ``observation``, or None."""
    stake = escalation_at_stake(observation, action)
    return None if stake is None else stake.amount
