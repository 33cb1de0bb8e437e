from django.conf import settings
from django.db import models

from procurement.models.status import TERMINAL_STATUSES, RunStatus
from procurement.models.stored_json import StoredJSONDecoder

# A training run lives the life of every worker run (queued, running, then finished =
# succeeded, failed or cancelled): one status table, one cancel (services.run_status).
TrainingStatus = RunStatus


class TrainingKind(models.TextChoices):
    SFT = "sft", "SFT (supervised, from stored episodes)"
    GRPO = "grpo", "GRPO (reinforcement, reward = episode score)"


class GrpoContinuation(models.TextChoices):
    """Who plays an episode's rest after a sampled GRPO reply (negotiation.training's
    ``Continuation``): the reward is that episode's score."""

    EXPERT = "expert", "the expert (one-step credit, cheap)"
    MODEL = "model", "the model itself (whole-episode rollouts)"


class TrainingRun(models.Model):
    """One training of a language-model buyer from stored episodes, on a gpu worker.

    Its result is a model folder under the data directory, registered as an ``llm``
    policy (``policy``) once the run succeeds; ``lineage`` says what made it (base, data,
    steps, metrics) and is copied onto the policy's description.
    """

    name = models.SlugField(max_length=100, unique=True, help_text="Also the policy's name.")
    kind = models.CharField(max_length=8, choices=TrainingKind.choices)
    base = models.CharField(
        max_length=100, help_text="'smollm2' (the shipped model) or an llm policy's name."
    )
    base_model = models.CharField(max_length=500, help_text="The folder the base resolved to.")
    # The base policy's llm params (prompt budget, reply tokens...): training renders with
    # them and the trained policy plays with them, so what is trained is what is played.
    play_params = models.JSONField(decoder=StoredJSONDecoder, default=dict, blank=True)
    scenarios = models.JSONField(default=list, help_text="Scenario names the episodes come from.")
    source_policy = models.CharField(max_length=100, default="expert")
    min_score = models.FloatField(null=True, blank=True)
    episodes = models.PositiveIntegerField(help_text="How many stored episodes to learn from.")
    # The episodes picked when the run was created: a resumed run learns from the same.
    source_episode_ids = models.JSONField(default=list, blank=True)
    max_steps = models.PositiveIntegerField()
    learning_rate = models.FloatField()
    lora = models.BooleanField(default=False)
    continuation = models.CharField(
        max_length=8,
        choices=GrpoContinuation.choices,
        default=GrpoContinuation.EXPERT,
        help_text="GRPO: who plays an episode's rest after a sampled reply, for its reward.",
    )
    status = models.CharField(
        max_length=16, choices=TrainingStatus.choices, default=TrainingStatus.QUEUED
    )
    step = models.PositiveIntegerField(default=0)
    # [{step, loss, learning_rate, reward, ...}], one entry per logged step
    metrics = models.JSONField(decoder=StoredJSONDecoder, default=list, blank=True)
    log_tail = models.TextField(blank=True)
    output_dir = models.CharField(max_length=500)
    lineage = models.JSONField(decoder=StoredJSONDecoder, default=dict, blank=True)
    error = models.TextField(blank=True)
    policy = models.ForeignKey(
        "procurement.PolicyConfig",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="training_runs",
    )
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return self.name

    @property
    def is_terminal(self) -> bool:
        return self.status in TERMINAL_STATUSES

    @property
    def progress(self) -> float:
        return min(1.0, self.step / self.max_steps) if self.max_steps else 0.0

    @property
    def group_name(self) -> str:
        return f"training-{self.pk}"
