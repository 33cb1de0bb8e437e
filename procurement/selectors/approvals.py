"""Reads for escalations waiting on (or given) an answer: the scenario's approval rules,
a requirement's standing refusal, who may not answer and why, and the payload the API,
the page and the socket show."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from negotiation.config import ScenarioConfig
from procurement.models import ApprovalRequest, ApprovalStatus, Episode, EpisodeStatus
from procurement.roles import ROLES, Role

_FIELDS = ScenarioConfig.model_fields
RULE = "the scenario's rule"  # who answers when no person does


@dataclass(frozen=True, slots=True)
class ApprovalRules:
    """What the episode's scenario says about approvals (defaults for older snapshots)."""

    role: Role  # the lowest role that may answer
    above: float  # a person answers only stakes above this
    timeout_s: int

    @classmethod
    def of(cls, episode: Episode) -> ApprovalRules:
        snap = episode.scenario_snapshot
        names = ("escalation_approver_role", "escalation_approval_above", "approval_timeout_s")
        return cls(*(snap.get(name, _FIELDS[name].default) for name in names))

    @property
    def approvers(self) -> str:
        """The roles that may answer, in words: "ops or admins"."""
        plural = [r if r.endswith("s") else f"{r}s" for r in ROLES[ROLES.index(self.role) :]]
        return plural[0] if len(plural) == 1 else ", ".join(plural[:-1]) + " or " + plural[-1]


@dataclass(frozen=True, slots=True)
class StandingRefusal:
    """A person's refusal that still holds for a requirement. ``final``: its one review
    is over (upheld or lapsed), so every later escalation is refused at once."""

    refusal: ApprovalRequest
    final: bool


def standing_text(refusal: ApprovalRequest) -> str:
    """How a person's refusal is cited while it stands: "standing refusal by X at T"."""
    return f"standing refusal by {username(refusal)} at {when(refusal)}"


def username(request: ApprovalRequest) -> str:
    return request.decided_by.get_username() if request.decided_by else "a deleted user"


def when(request: ApprovalRequest) -> str:
    return request.decided_at.isoformat(timespec="seconds") if request.decided_at else "?"


def standing_refusal(
    *, episode: Episode, requirement_id: Any, before_step: int
) -> StandingRefusal | None:
    """The refusal that holds for the requirement at ``before_step``, from the answers
    before it: the latest one decides. A person's own refusal stands (its next repeat is
    the review); a refusal that repeats one (upheld in review, lapsed, or refused at once)
    makes it final; an approval or the rule's answer means none stands."""
    answered = (
        ApprovalRequest.objects.filter(episode=episode, step__lt=before_step)
        .exclude(status__in=[ApprovalStatus.PENDING, ApprovalStatus.WITHDRAWN])
        .select_related("decided_by", "standing_refusal__decided_by")
        .order_by("-step")
    )
    last = next((r for r in answered if r.action.get("requirement_id") == requirement_id), None)
    if last is None or last.status != ApprovalStatus.REFUSED:
        return None
    if last.standing_refusal is None:
        return StandingRefusal(last, final=False)
    return StandingRefusal(last.standing_refusal, final=True)


def barred_from_answering(
    episode: Episode, request: ApprovalRequest | None
) -> dict[int, tuple[str, str]]:
    """Users who may not answer ``request`` whatever their role: user id -> (username,
    why). The starter never; in a review of a standing refusal, not its refuser either."""
    barred: dict[int, tuple[str, str]] = {}
    if episode.created_by_id is not None:
        barred[episode.created_by_id] = (
            episode.created_by.get_username(),
            "You started this run; someone else must answer its escalations.",
        )
    refusal = request.standing_refusal if request is not None else None
    if refusal is not None and refusal.decided_by_id is not None:
        barred.setdefault(
            refusal.decided_by_id,
            (
                username(refusal),
                f"You refused this requirement's escalation at {when(refusal)}; "
                "someone else must review it.",
            ),
        )
    return barred


def answered_by(request: ApprovalRequest) -> str:
    """Who answered, as the decision's action records it."""
    if request.decided_by is not None:
        return request.decided_by.get_username()
    if request.status == ApprovalStatus.REFUSED and request.standing_refusal is not None:
        return f"{username(request.standing_refusal)} (standing refusal)"
    return RULE


def approval_payload(request: ApprovalRequest) -> dict[str, Any]:
    action = request.action
    rules = ApprovalRules.of(request.episode)
    refusal = request.standing_refusal
    decided = request.status not in (ApprovalStatus.PENDING, ApprovalStatus.WITHDRAWN)
    return {
        "episode": request.episode_id,
        "step": request.step,
        "status": request.status,
        "requirement_id": action.get("requirement_id"),
        "supplier_id": action.get("supplier_id"),
        "rationale": action.get("rationale"),
        "stake": request.stake,
        "subject": request.subject,
        "requested_at": request.requested_at.isoformat() if request.requested_at else None,
        "deadline": request.deadline.isoformat(),
        "decided_by": request.decided_by.get_username() if request.decided_by else None,
        "decided_at": request.decided_at.isoformat() if request.decided_at else None,
        "answered_by": answered_by(request) if decided else None,
        "reason": request.reason,
        "standing_refusal": (
            {"by": username(refusal), "at": when(refusal), "step": refusal.step}
            if refusal is not None
            else None
        ),
        "approver_role": rules.role,
        "approvers": rules.approvers,
        "barred": {
            name: why for name, why in barred_from_answering(request.episode, request).values()
        },
    }


_RELATED = ("decided_by", "standing_refusal__decided_by", "episode__created_by")


def pending_approvals(*, episode: Episode | None = None) -> list[ApprovalRequest]:
    """Pending requests of running episodes (of ``episode``; None: of all), oldest first."""
    queryset = ApprovalRequest.objects.filter(
        status=ApprovalStatus.PENDING, episode__status=EpisodeStatus.RUNNING
    ).select_related(*_RELATED)
    if episode is not None:
        queryset = queryset.filter(episode=episode)
    return list(queryset.order_by("requested_at"))


def episode_approvals(*, episode: Episode) -> list[ApprovalRequest]:
    """Every escalation of the episode that asked for an answer, with it, in step order."""
    return list(episode.approvals.select_related(*_RELATED).order_by("step"))
