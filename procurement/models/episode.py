from django.conf import settings
from django.db import models

from procurement.models.status import TERMINAL_STATUSES, RunStatus, run_seconds
from procurement.models.stored_json import StoredJSONDecoder
from procurement.run_plan import CPU_QUEUE, RunPlan

EpisodeStatus = RunStatus


class Episode(models.Model):
    """One run of a scenario with a buyer policy and a seed.

    Scenario and policy are snapshotted: editing them later never changes what this
    episode was, and a replay uses exactly the snapshot. Neither can be deleted while an
    episode refers to it (PROTECT): results keep pointing at what produced them.
    """

    scenario = models.ForeignKey(
        "procurement.Scenario",
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="episodes",
    )
    scenario_name = models.CharField(max_length=100)
    scenario_version = models.PositiveIntegerField(default=1)
    scenario_snapshot = models.JSONField(decoder=StoredJSONDecoder)
    policy = models.ForeignKey(
        "procurement.PolicyConfig",
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="episodes",
    )
    policy_name = models.CharField(max_length=100)
    policy_version = models.PositiveIntegerField(default=1)
    policy_snapshot = models.JSONField(decoder=StoredJSONDecoder)
    seed = models.BigIntegerField()
    sealed = models.BooleanField(
        default=False,
        help_text="Its hidden world is drawn from the seed under the server's key (a "
        "person's seat): the seed rebuilds nothing, and it is shown once the episode ends.",
    )
    supplier_seat = models.JSONField(
        null=True,
        blank=True,
        help_text="A person plays one supplier (services.supplier_seat): {supplier_id, "
        "idle_seconds}, the buyer's offer waiting for them (turn), and the hand-over to "
        "the rule supplier after an idle wait (handed_over). Null: no supplier seat.",
    )
    step_delay = models.FloatField(
        default=0.0,
        help_text="Seconds between decisions: 0 plays at engine speed; a live episode is "
        "paced so that people can watch each decision arrive.",
    )
    status = models.CharField(
        max_length=16, choices=EpisodeStatus.choices, default=EpisodeStatus.QUEUED
    )
    queue = models.CharField(max_length=16, default=CPU_QUEUE)  # run_plan.queue at build
    sweep = models.ForeignKey(
        "procurement.Sweep",
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="episodes",
    )
    steps = models.PositiveIntegerField(default=0)
    score = models.FloatField(null=True, blank=True)
    metrics = models.JSONField(decoder=StoredJSONDecoder, default=dict, blank=True)
    error = models.TextField(blank=True)
    # Each claim by a worker increments ``attempts``; the attempt number is the fencing
    # token that lets only the newest attempt write (see services.episode_runner).
    attempts = models.PositiveSmallIntegerField(default=0)
    # Last sign of progress (claim or stored batch): the reconciler resumes runs whose
    # heartbeat stopped and for which the broker holds no message.
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    engine_seconds = models.FloatField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [
            models.Index(fields=["status", "-created_at"], name="episode_status_recent"),
            models.Index(fields=["scenario_name", "policy_name"], name="episode_scenario_policy"),
            models.Index(fields=["-created_at"], name="episode_recent"),
            models.Index(fields=["status", "heartbeat_at"], name="episode_status_heartbeat"),
            # a sweep cell's episode: linked in one UPDATE per chunk
            models.Index(fields=["sweep", "scenario", "policy", "seed"], name="episode_sweep_cell"),
        ]

    def __str__(self) -> str:
        seed = "sealed" if self.shown_seed is None else f"seed {self.seed}"
        return f"#{self.pk} {self.scenario_name} / {self.policy_name} / {seed}"

    @property
    def is_terminal(self) -> bool:
        return self.status in TERMINAL_STATUSES

    @property
    def shown_seed(self) -> int | None:
        """The seed as every page, response, stream and log line shows it: None for a
        sealed episode until it ends (DESIGN 2: a player is not told the seed while it
        plays), the seed otherwise. The Django admin shows the stored field."""
        return None if self.sealed and not self.is_terminal else self.seed

    @property
    def run_plan(self) -> RunPlan:
        """What plays it (an LLM buyer, LLM suppliers, a person), from its pinned snapshots."""
        return RunPlan.of(
            scenario_config=self.scenario_snapshot, policy_snapshot=self.policy_snapshot
        )

    @property
    def group_name(self) -> str:
        return f"episode-{self.pk}"

    @property
    def duration_seconds(self) -> float | None:
        return run_seconds(self.started_at, self.finished_at)


class Decision(models.Model):
    """One step of an episode: the buyer's action, its outcome and the state after it."""

    # The fields of an engine StepRecord (negotiation.runner), stored one to one.
    RECORD_FIELDS = (
        "step",
        "week",
        "action",
        "valid",
        "error",
        "response",
        "reward",
        "running_score",
        "events",
        "state",
    )
    # Who decided and how (StepRecord's decision metadata), with the value a record
    # without it stores: rule policies leave these out.
    META_DEFAULTS = {
        "actor": "policy",
        "message": None,
        "rationale": None,
        "llm_parse_failure": False,
        "llm_fallback": False,
        "llm_error": None,
        "guard_interventions": 0,
        "guard_repairs": (),
        "supplier_actor": None,
    }
    STORED_FIELDS = (*RECORD_FIELDS, *META_DEFAULTS)

    episode = models.ForeignKey(
        "procurement.Episode", on_delete=models.CASCADE, related_name="decisions"
    )
    step = models.PositiveIntegerField()
    week = models.PositiveIntegerField()
    action = models.JSONField(decoder=StoredJSONDecoder)
    valid = models.BooleanField()
    error = models.JSONField(decoder=StoredJSONDecoder, null=True, blank=True)
    response = models.JSONField(decoder=StoredJSONDecoder, null=True, blank=True)
    reward = models.FloatField()
    running_score = models.FloatField()
    events = models.JSONField(decoder=StoredJSONDecoder, default=list, blank=True)
    state = models.JSONField(decoder=StoredJSONDecoder, default=dict, blank=True)
    # "policy", "llm", "fallback:<policy>" (the LLM failed and the fallback decided), "human"
    actor = models.CharField(max_length=64, default="policy")
    message = models.TextField(null=True, blank=True, help_text="The LLM buyer's message.")
    rationale = models.TextField(
        null=True,
        blank=True,
        help_text="Why the buyer chose the action: the LLM's words or a rule policy's reason.",
    )
    llm_parse_failure = models.BooleanField(default=False)
    llm_fallback = models.BooleanField(default=False)
    llm_error = models.TextField(null=True, blank=True)
    guard_interventions = models.PositiveSmallIntegerField(default=0)
    # each repair's reason, as anyone who reads the episode may see it (guard.public_repairs)
    guard_repairs = models.JSONField(decoder=StoredJSONDecoder, default=list, blank=True)
    # who answered for the supplier: "rule", "llm", "fallback:rule"; null when none did
    supplier_actor = models.CharField(max_length=32, null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["episode", "step"]
        constraints = [
            models.UniqueConstraint(fields=["episode", "step"], name="decision_unique_step")
        ]

    def __str__(self) -> str:
        return f"episode {self.episode_id} step {self.step}: {self.action.get('action_type')}"

    @property
    def action_type(self) -> str:
        return str(self.action.get("action_type", ""))
