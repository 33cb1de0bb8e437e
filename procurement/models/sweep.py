from django.conf import settings
from django.db import models

from procurement.models.status import TERMINAL_STATUSES, RunStatus, run_seconds
from procurement.models.stored_json import StoredJSONDecoder

SweepStatus = RunStatus


class Sweep(models.Model):
    """Scenarios x policies x seeds, run on workers, one result row per cell.

    ``pinned`` holds the scenario configs and policy snapshots (with their versions) as
    they were when the sweep was created, keyed by id: every cell plays those, so editing
    a scenario or policy mid-run never mixes two versions in one result.
    """

    name = models.CharField(max_length=200, blank=True)
    scenarios = models.ManyToManyField("procurement.Scenario", related_name="sweeps")
    policies = models.ManyToManyField("procurement.PolicyConfig", related_name="sweeps")
    seeds = models.PositiveIntegerField()
    seed_start = models.BigIntegerField(default=0)
    status = models.CharField(
        max_length=16, choices=SweepStatus.choices, default=SweepStatus.QUEUED
    )
    total_cells = models.PositiveIntegerField(default=0)
    done_cells = models.PositiveIntegerField(default=0)
    failed_cells = models.PositiveIntegerField(default=0)
    summary = models.JSONField(decoder=StoredJSONDecoder, default=dict, blank=True)
    pinned = models.JSONField(decoder=StoredJSONDecoder, default=dict, blank=True)
    error = models.TextField(blank=True)
    # Last sign of progress (start, or cells stored); see Episode.heartbeat_at.
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["status", "-created_at"], name="sweep_status_recent")]

    def __str__(self) -> str:
        return self.name or f"sweep {self.pk}"

    @property
    def is_terminal(self) -> bool:
        return self.status in TERMINAL_STATUSES

    @property
    def duration_seconds(self) -> float | None:
        return run_seconds(self.started_at, self.finished_at)

    @property
    def progress(self) -> float:
        return (self.done_cells + self.failed_cells) / self.total_cells if self.total_cells else 0.0

    @property
    def group_name(self) -> str:
        return f"sweep-{self.pk}"


class SweepCell(models.Model):
    """One (scenario, policy, seed) of a sweep; exactly one per combination."""

    sweep = models.ForeignKey("procurement.Sweep", on_delete=models.CASCADE, related_name="cells")
    # PROTECT: a scenario or policy a result refers to cannot be deleted from under it.
    scenario = models.ForeignKey("procurement.Scenario", on_delete=models.PROTECT)
    policy = models.ForeignKey("procurement.PolicyConfig", on_delete=models.PROTECT)
    seed = models.BigIntegerField()
    episode = models.OneToOneField(
        "procurement.Episode",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="sweep_cell",
    )
    status = models.CharField(max_length=16, default="pending")
    score = models.FloatField(null=True, blank=True)
    metrics = models.JSONField(decoder=StoredJSONDecoder, default=dict, blank=True)
    error = models.TextField(blank=True, help_text="Why the cell failed (failed cells only).")

    class Meta:
        ordering = ["sweep", "scenario", "policy", "seed"]
        constraints = [
            models.UniqueConstraint(
                fields=["sweep", "scenario", "policy", "seed"], name="sweep_cell_unique"
            )
        ]
        indexes = [models.Index(fields=["sweep", "status"], name="sweep_cell_status")]

    def __str__(self) -> str:
        return f"{self.sweep_id}:{self.scenario_id}/{self.policy_id}/{self.seed}"
