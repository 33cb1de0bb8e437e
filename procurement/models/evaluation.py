from django.conf import settings
from django.db import models

from procurement.models.stored_json import StoredJSONDecoder


class Evaluation(models.Model):
    """A finished evaluation (``manage.py evaluate``): its parameters, and the league
    tables that negotiation/evaluation.py computed, as JSON: the leaderboard (with paired
    differences, ties, pass^k, worst case and cost), the buyers x suppliers matrix, the
    suppliers' table and the ratings (buyers and suppliers in separate pools).

    Rows are written once, complete, when the run ends; nothing refers to scenario or
    policy rows, so a stored evaluation stays readable whatever is edited later.
    """

    name = models.CharField(max_length=200, blank=True)
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
    seconds = models.FloatField(default=0.0, help_text="Wall time of the run.")
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
    started_at = models.DateTimeField()
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return self.name or f"evaluation {self.pk}"
