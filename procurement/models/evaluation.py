from django.conf import settings
from django.db import models

from procurement.models.status import TERMINAL_STATUSES, RunStatus
from procurement.models.stored_json import StoredJSONDecoder

# An evaluation lives the life of every worker run (queued, running, then finished,
# failed or cancelled): one status table, one cancel (services.run_status).
EvaluationStatus = RunStatus


class Evaluation(models.Model):
    """An evaluation run (``manage.py evaluate``, or the Evaluations page's form): its
    parameters, its progress while a worker runs it, and the league tables that
    negotiation/evaluation.py computed, as JSON: the leaderboard (with paired
    differences, ties, pass^k, worst case and cost), the buyers x suppliers matrix, the
    suppliers' table and the ratings (buyers and suppliers in separate pools).

    The players' snapshots and the scenarios' configs are pinned when the run is created
    (``pinned``); nothing refers to scenario or policy rows, so a stored evaluation stays
    readable (and a queued one runs the same) whatever is edited later.
    """

    name = models.CharField(max_length=200, blank=True)
    status = models.CharField(
        max_length=16, choices=EvaluationStatus.choices, default=EvaluationStatus.QUEUED
    )
    queue = models.CharField(
        max_length=8, default="cpu", help_text="The worker queue it runs on: cpu, or gpu (LLMs)."
    )
    policies = models.JSONField(
        decoder=StoredJSONDecoder, help_text="Buyer policy names, in the order given."
    )
    scenarios = models.JSONField(
        decoder=StoredJSONDecoder, help_text="Scenario names, in the order given."
    )
    tiers = models.JSONField(
        decoder=StoredJSONDecoder,
        default=list,
        blank=True,
        help_text="Curriculum tiers; empty: each scenario as stored.",
    )
    suppliers = models.JSONField(
        decoder=StoredJSONDecoder,
        default=list,
        blank=True,
        help_text="Supplier line-ups, in the order given (negotiation/lineups.py).",
    )
    seeds = models.PositiveIntegerField()
    replays = models.PositiveSmallIntegerField(
        default=1, help_text="Plays per (buyer, seed): the buyer's own seed varies."
    )
    prices = models.JSONField(
        decoder=StoredJSONDecoder,
        default=dict,
        blank=True,
        help_text="Money per million tokens by model: [in, out].",
    )
    seed_start = models.BigIntegerField(default=0)
    sealed = models.BooleanField(
        default=False,
        help_text="Held-out worlds: drawn from the seeds under the server's key, so no one "
        "can rebuild them from the seeds.",
    )
    workers = models.PositiveSmallIntegerField(default=1)
    episodes = models.PositiveIntegerField(default=0)
    llm_episodes = models.PositiveIntegerField(
        default=0, help_text="Episodes that call a language model (buyer or suppliers)."
    )
    done_episodes = models.PositiveIntegerField(default=0)
    current_cell = models.CharField(
        max_length=300, blank=True, help_text="The cell playing now: scenario, line-up, buyer."
    )
    error = models.TextField(blank=True)
    # {"players": {name: snapshot}, "configs": {scenario: engine config}}, pinned at creation
    pinned = models.JSONField(decoder=StoredJSONDecoder, default=dict, blank=True)
    # One row per episode ([scenario, tier, line-up, buyer, seed, replay, score, ...], see
    # selectors.evaluations.OUTCOME_FIELDS); empty when there were too many to keep.
    outcomes = models.JSONField(decoder=StoredJSONDecoder, default=list, blank=True)
    seconds = models.FloatField(
        default=0.0,
        help_text="Wall time from the run's first start to its seal, restarts and waits "
        "included (each lane's own play time: EvaluationPart.seconds).",
    )
    exposed = models.JSONField(
        decoder=StoredJSONDecoder,
        default=list,
        blank=True,
        help_text="Sealed only: worlds of its range a person had played in a seat before it "
        "was sealed, [{scenario, seed, episodes}] (services.held_out).",
    )
    leaderboard_unexposed = models.JSONField(
        decoder=StoredJSONDecoder,
        default=list,
        blank=True,
        help_text="With exposed worlds only: the leaderboard on the seeds no person had "
        "seen (each exposed world dropped for every player, so the seeds stay paired).",
    )
    leaderboard = models.JSONField(decoder=StoredJSONDecoder, default=list, blank=True)
    ratings = models.JSONField(decoder=StoredJSONDecoder, default=list, blank=True)
    matrix = models.JSONField(
        decoder=StoredJSONDecoder,
        default=list,
        blank=True,
        help_text="Per scenario: buyers x supplier line-ups, mean score and episodes.",
    )
    supplier_table = models.JSONField(
        decoder=StoredJSONDecoder,
        default=list,
        blank=True,
        help_text="Per scenario and line-up: the surplus its suppliers kept.",
    )
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return self.name or f"evaluation {self.pk}"

    @property
    def is_terminal(self) -> bool:
        return self.status in TERMINAL_STATUSES

    @property
    def progress(self) -> float:
        return min(1.0, self.done_episodes / self.episodes) if self.episodes else 0.0

    @property
    def group_name(self) -> str:
        return f"evaluation-{self.pk}"


class EvaluationPart(models.Model):
    """One lane of an evaluation run (negotiation.evaluation.LANES): its rule episodes
    (the cpu queue) or its episodes that call a model (the gpu queue). The lanes of one
    run play apart, in parallel, each claimed by one task at a time (its heartbeat); the
    lane that finishes last seals the run (services.evaluations)."""

    evaluation = models.ForeignKey(Evaluation, on_delete=models.CASCADE, related_name="parts")
    lane = models.CharField(max_length=8)
    queue = models.CharField(max_length=8)
    status = models.CharField(
        max_length=16, choices=EvaluationStatus.choices, default=EvaluationStatus.QUEUED
    )
    episodes = models.PositiveIntegerField()
    done_episodes = models.PositiveIntegerField(default=0)
    seconds = models.FloatField(
        default=0.0, help_text="Time this lane spent playing, summed over its attempts."
    )
    heartbeat_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["evaluation", "lane"]
        constraints = [
            models.UniqueConstraint(fields=["evaluation", "lane"], name="evaluation_part_lane")
        ]

    def __str__(self) -> str:
        return f"{self.evaluation_id}/{self.lane}"


class EvaluationPiece(models.Model):
    """Outcomes of episodes a lane played, stored as they ended (about once a second):
    a resumed run (restart, duplicate delivery, reconciler) plays only the episodes no
    piece holds. ``data`` is negotiation.evaluation.pack_outcomes's (compressed records,
    every field the tables need); a lane that ends folds its pieces into one, and the
    pieces are dropped once the run is sealed."""

    evaluation = models.ForeignKey(Evaluation, on_delete=models.CASCADE, related_name="pieces")
    lane = models.CharField(max_length=8)
    episodes = models.PositiveIntegerField(help_text="How many outcomes ``data`` holds.")
    data = models.BinaryField()
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["pk"]

    def __str__(self) -> str:
        return f"{self.evaluation_id}/{self.lane}#{self.pk}"
