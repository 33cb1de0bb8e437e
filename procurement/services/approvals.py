"""Human approval of escalations, for scenarios with ``escalation_approver: human``.

In a live single episode the runner stops when the buyer escalates, stores a pending
ApprovalRequest and frees its worker (no process waits for the person). An approver's
answer, or the scenario's timeout, sends the run on: it replays its stored steps, the
buyer asks again (policies are functions of seed and observation), and this time the
escalation carries the answer, which the engine honours and the decision's action
records (who, when, why). Sweeps never wait: they play the scenario's rule.

Separation of duties (the rules, in the order they apply):
1. Who may answer: a user with at least the scenario's ``escalation_approver_role``,
   never the person who started the run (whatever their role, superusers included).
   Anyone else gets Forbidden (403) and the page offers them no buttons, saying why.
2. A standing refusal: once a person refuses an escalation on a requirement, that
   refusal holds for the requirement (whichever PR or supplier a later escalation names)
   for the rest of the episode. The buyer's next escalation on it is its one review: it
   waits for someone other than the starter and the refuser; an approval there lifts the
   refusal, and if they refuse too or nobody answers by the deadline, the refusal is
   final: this and every later escalation on the requirement is refused at once,
   recorded as "standing refusal by X at T". One review per refusal bounds how long an
   agent that asks again and again can hold its run.
3. The amount: escalations with no more than ``escalation_approval_above`` at stake
   (``negotiation.escalation_stake``: a PR's amount, or a thread's standing counter x the
   quantity still needed), or none (the engine would refuse the action), are answered by
   the rule at once.
4. Otherwise a person answers; at the deadline the rule does (timed out).
Every answer records who (a person, or none for an automatic one), when and why.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.utils import timezone

from negotiation.escalation_stake import Stake, escalation_at_stake
from procurement import dispatch
from procurement.errors import Conflict, Forbidden
from procurement.models import ApprovalRequest, ApprovalStatus, Episode, EpisodeStatus
from procurement.models.approval import SUBJECT_CHARS
from procurement.roles import has_role, user_role
from procurement.selectors.approvals import (
    ApprovalRules,
    answered_by,
    approval_payload,
    barred_from_answering,
    pending_approvals,
    standing_refusal,
    standing_text,
)
from procurement.services import live


class AwaitingApproval(Exception):
    """The run stops here until a person answers (or the timeout does)."""


def approval_required(*, episode: Episode) -> bool:
    return (
        episode.sweep_id is None
        and episode.scenario_snapshot.get("escalation_approver") == "human"
        and not episode.run_plan.human_seat  # a human seat's escalations follow the rule
    )


def _publish(request: ApprovalRequest) -> None:
    live.publish_approval(request.episode, approval_payload(request))


class ApprovalGate:
    """Wraps the buyer policy: an escalation passes only with an answer attached."""

    def __init__(self, policy: Any, episode: Episode) -> None:
        self._policy = policy
        self._episode = episode

    def __getattr__(self, name: str) -> Any:  # name, stats, last_decision, reset...
        return getattr(self._policy, name)

    def act(self, observation) -> Any:
        action = self._policy.act(observation)
        if not isinstance(action, dict) or action.get("action_type") != "escalate":
            return action
        action = {k: v for k, v in action.items() if k != "approval"}
        request = approval_for_step(
            episode=self._episode,
            step=observation.step,
            action=self._asked(action),
            stake=escalation_at_stake(observation, action),
        )
        approval = {"decision": request.status, "by": answered_by(request)}
        if request.decided_at:
            approval["at"] = request.decided_at.isoformat()
        return {**action, "approval": {**approval, "reason": request.reason}}

    def _asked(self, action: dict[str, Any]) -> dict[str, Any]:
        """The escalation as the approver reads it: a rule policy's reason goes into the
        request's copy only, never into the action played (nor the training data)."""
        decision = self._policy.last_decision
        reason = getattr(decision, "rationale", None)
        return action if action.get("rationale") or not reason else {**action, "rationale": reason}


def approval_for_step(
    *, episode: Episode, step: int, action: dict[str, Any], stake: Stake | None
) -> ApprovalRequest:
    """The answer to the escalation at ``step``; raises AwaitingApproval while there is
    none (asking for one the first time, unless rules 2-3 answer at once)."""
    request = ApprovalRequest.objects.filter(episode=episode, step=step).first()
    if request is None:
        request, created = ApprovalRequest.objects.get_or_create(
            episode=episode, step=step, defaults=_first_answer(episode, step, action, stake)
        )
        if created:
            _publish(request)
    if request.status == ApprovalStatus.PENDING:
        if request.deadline > timezone.now():
            raise AwaitingApproval(episode.pk)
        if _lapse(request):
            _publish(request)
    return request


def _first_answer(
    episode: Episode, step: int, action: dict[str, Any], at_stake: Stake | None
) -> dict[str, Any]:
    """A new request's fields: pending, or answered at once by rule 2 or 3."""
    rules = ApprovalRules.of(episode)
    now = timezone.now()
    stake = None if at_stake is None else at_stake.amount
    fields: dict[str, Any] = {
        "action": action,
        "stake": stake,
        "subject": "" if at_stake is None else at_stake.subject[:SUBJECT_CHARS],
        "deadline": now + timedelta(seconds=rules.timeout_s),
    }
    standing = standing_refusal(
        episode=episode, requirement_id=action.get("requirement_id"), before_step=step
    )
    auto = {"decided_at": now}
    if standing is not None:
        fields["standing_refusal"] = standing.refusal
        if not standing.final:
            return fields  # the review
        reason = f"Refused at once: {standing_text(standing.refusal)}."
        return {**fields, **auto, "status": ApprovalStatus.REFUSED, "reason": reason}
    if stake is None:
        reason = "Nothing to approve (the engine refuses this escalation as it stands)."
    elif stake <= rules.above:
        reason = f"{stake:,.2f} at stake is not above {rules.above:,.2f}: the rule approves."
    else:
        return fields
    return {**fields, **auto, "status": ApprovalStatus.APPROVED, "reason": reason}


def _decide(request: ApprovalRequest, status: str, user, reason: str) -> bool:
    """pending -> status, once (a conditional UPDATE: two approvers cannot both win)."""
    now = timezone.now()
    changed = ApprovalRequest.objects.filter(pk=request.pk, status=ApprovalStatus.PENDING).update(
        status=status, decided_at=now, decided_by=user, reason=reason
    )
    request.refresh_from_db()
    return bool(changed)


def _lapse(request: ApprovalRequest) -> bool:
    """Nobody answered by the deadline: a review upholds its standing refusal; any other
    request gets the scenario's rule."""
    waited = ApprovalRules.of(request.episode).timeout_s
    refusal = request.standing_refusal
    if refusal is None:
        reason = f"No answer within {waited} s: the scenario's rule approved."
        return _decide(request, ApprovalStatus.TIMED_OUT, None, reason)
    reason = f"Refused: {standing_text(refusal)}; nobody else answered within {waited} s."
    return _decide(request, ApprovalStatus.REFUSED, None, reason)


def approval_answer(*, episode: Episode, user, approve: bool) -> ApprovalRequest:
    """A person's answer to the episode's pending escalation; the run goes on.

    Forbidden for the starter, a standing refusal's refuser in its review, and anyone
    below the scenario's approver role; Conflict when nothing is pending (already
    answered, timed out, or the run ended)."""
    request = next(iter(pending_approvals(episode=episode)), None)
    barred = barred_from_answering(episode, request).get(user.pk)
    if barred is not None:
        raise Forbidden(barred[1])
    rules = ApprovalRules.of(episode)
    if not has_role(user, rules.role):
        raise Forbidden(f"This scenario's escalations are answered by {rules.approvers}.")
    status = ApprovalStatus.APPROVED if approve else ApprovalStatus.REFUSED
    if request is None or not _decide(request, status, user, _reason(request, user, approve)):
        raise Conflict("No escalation of this episode is waiting for an answer.")
    _resume(request)
    return request


def _reason(request: ApprovalRequest, user, approve: bool) -> str:
    verb = "Approved" if approve else "Refused"
    reason = f"{verb} by {user.get_username()} ({user_role(user)})"
    if request.standing_refusal is None:
        return reason + "."
    effect = "lifting" if approve else "upholding"
    return f"{reason}, {effect} the {standing_text(request.standing_refusal)}."


def _resume(request: ApprovalRequest) -> None:
    episode = request.episode
    dispatch.enqueue(dispatch.RUN_EPISODE, episode.pk, queue=episode.queue)
    _publish(request)


def approvals_expire() -> list[int]:
    """Pending requests past their deadline: the rule answers (a review's standing
    refusal holds) and the runs go on."""
    expired = []
    overdue = ApprovalRequest.objects.filter(
        status=ApprovalStatus.PENDING,
        deadline__lt=timezone.now(),
        episode__status=EpisodeStatus.RUNNING,
    ).select_related("episode", "standing_refusal__decided_by")
    for request in overdue:
        if _lapse(request):
            _resume(request)
            expired.append(request.episode_id)
    return expired


def approvals_withdraw(*, episode: Episode) -> None:
    """The run ended (cancelled, failed): nothing is waiting any more."""
    ApprovalRequest.objects.filter(episode=episode, status=ApprovalStatus.PENDING).update(
        status=ApprovalStatus.WITHDRAWN,
        decided_at=timezone.now(),
        reason="The run ended before an answer.",
    )
