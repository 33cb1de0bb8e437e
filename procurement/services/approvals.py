"""Human approval of escalations, for scenarios with ``escalation_approver: human``.

In a live single episode the runner stops when the buyer escalates, stores a pending
ApprovalRequest and frees its worker (no process waits for the person). An approver's
answer, or the scenario's timeout, sends the run on: it replays its stored steps, the
buyer asks again (policies are functions of seed and observation), and this time the
escalation carries the answer, which the engine honours and the decision's action
records (who, when). Sweeps never wait: they play the scenario's rule.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.utils import timezone

from procurement import dispatch
from procurement.errors import Conflict, Forbidden
from procurement.models import ApprovalRequest, ApprovalStatus, Episode, EpisodeStatus
from procurement.roles import may_cancel_episode
from procurement.selectors.approvals import approval_payload, pending_approvals
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
        request = approval_for_step(episode=self._episode, step=observation.step, action=action)
        by = request.decided_by.get_username() if request.decided_by else "the scenario's rule"
        approval = {"decision": request.status, "by": by}
        if request.decided_at:
            approval["at"] = request.decided_at.isoformat()
        return {**action, "approval": approval}


def approval_for_step(*, episode: Episode, step: int, action: dict[str, Any]) -> ApprovalRequest:
    """The answer to the escalation at ``step``; raises AwaitingApproval while there is
    none (asking for one the first time)."""
    request, created = ApprovalRequest.objects.get_or_create(
        episode=episode,
        step=step,
        defaults={
            "action": action,
            "deadline": timezone.now()
            + timedelta(seconds=episode.scenario_snapshot.get("approval_timeout_s", 120)),
        },
    )
    if created:
        _publish(request)
        raise AwaitingApproval(episode.pk)
    if request.status == ApprovalStatus.PENDING:
        if request.deadline > timezone.now():
            raise AwaitingApproval(episode.pk)
        _decide(request, ApprovalStatus.TIMED_OUT, None)
    return request


def _decide(request: ApprovalRequest, status: str, user) -> bool:
    """pending -> status, once (a conditional UPDATE: two approvers cannot both win)."""
    now = timezone.now()
    changed = ApprovalRequest.objects.filter(pk=request.pk, status=ApprovalStatus.PENDING).update(
        status=status, decided_at=now, decided_by=user
    )
    request.refresh_from_db()
    return bool(changed)


def approval_answer(*, episode: Episode, user, approve: bool) -> ApprovalRequest:
    """An approver's answer to the episode's pending escalation; the run goes on.

    The people who steer a run answer it (roles.may_cancel_episode), else Forbidden;
    Conflict when nothing is pending (already answered, timed out, or the run ended)."""
    if not may_cancel_episode(user, episode):
        raise Forbidden("Ops, admins or the analyst who started it answer its approvals.")
    request = next(iter(pending_approvals(episode=episode)), None)
    status = ApprovalStatus.APPROVED if approve else ApprovalStatus.REFUSED
    if request is None or not _decide(request, status, user):
        raise Conflict("No escalation of this episode is waiting for an answer.")
    _resume(request)
    return request


def _resume(request: ApprovalRequest) -> None:
    episode = request.episode
    dispatch.enqueue(dispatch.RUN_EPISODE, episode.pk, queue=episode.queue)
    _publish(request)


def approvals_expire() -> list[int]:
    """Pending requests past their deadline: the rule answers and the runs go on."""
    expired = []
    overdue = ApprovalRequest.objects.filter(
        status=ApprovalStatus.PENDING,
        deadline__lt=timezone.now(),
        episode__status=EpisodeStatus.RUNNING,
    ).select_related("episode")
    for request in overdue:
        if _decide(request, ApprovalStatus.TIMED_OUT, None):
            _resume(request)
            expired.append(request.episode_id)
    return expired


def approvals_withdraw(*, episode: Episode) -> None:
    """The run ended (cancelled, failed): nothing is waiting any more."""
    ApprovalRequest.objects.filter(episode=episode, status=ApprovalStatus.PENDING).update(
        status=ApprovalStatus.WITHDRAWN, decided_at=timezone.now()
    )
