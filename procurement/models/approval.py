from django.conf import settings
from django.db import models

from procurement.models.stored_json import StoredJSONDecoder


class ApprovalStatus(models.TextChoices):
    PENDING = "pending"
    APPROVED = "approved"  # by a person, or at once by the rule (see reason)
    REFUSED = "refused"  # by a person, or by a standing refusal (see reason)
    TIMED_OUT = "timed_out"  # nobody answered in time: the scenario's rule did
    WITHDRAWN = "withdrawn"  # the run ended or moved on before an answer


SUBJECT_CHARS = 300


class ApprovalRequest(models.Model):
    """A buyer's escalation and its answer (scenarios with a human approver).

    The episode's runner stops at the escalation and frees its worker; the answer (or the
    timeout) sends the run on, and the decision's action records who answered and when.
    Every answer has a ``reason``; an automatic one (the rule, a timeout, a standing
    refusal) has no ``decided_by``. The rules: ``procurement.services.approvals``.
    """

    episode = models.ForeignKey(
        "procurement.Episode", on_delete=models.CASCADE, related_name="approvals"
    )
    step = models.PositiveIntegerField()
    action = models.JSONField(decoder=StoredJSONDecoder)
    status = models.CharField(
        max_length=16, choices=ApprovalStatus.choices, default=ApprovalStatus.PENDING
    )
    requested_at = models.DateTimeField(auto_now_add=True)
    deadline = models.DateTimeField()
    decided_at = models.DateTimeField(null=True, blank=True)
    decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )
    # The money at stake (negotiation.escalation_stake); None: nothing the engine would do.
    stake = models.FloatField(null=True, blank=True)
    # What the approver decides on, in words (negotiation.escalation_stake): the PR, or
    # the thread and its counter; blank for requests stored before it was kept.
    subject = models.CharField(max_length=SUBJECT_CHARS, blank=True, default="")
    # A person's earlier refusal on the same requirement that this request repeats.
    standing_refusal = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="repeats"
    )
    reason = models.CharField(max_length=500, blank=True, default="")

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["episode", "step"], name="approval_unique_step")
        ]
        indexes = [models.Index(fields=["status", "deadline"], name="approval_status_deadline")]

    def __str__(self) -> str:
        return f"escalation of episode {self.episode_id} at step {self.step}: {self.status}"
