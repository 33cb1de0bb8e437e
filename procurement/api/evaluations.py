"""Read-only REST views of evaluations (``manage.py evaluate`` and the Evaluations page
start them)."""

from __future__ import annotations

from rest_framework import mixins, serializers, viewsets

from procurement.api.permissions import RolePermission
from procurement.models import Evaluation
from procurement.selectors.evaluations import evaluation_list

ID_REGEX = r"[0-9]{1,18}"  # as the other viewsets: a non-numeric id is a 404


class EvaluationSerializer(serializers.ModelSerializer):
    created_by = serializers.SlugRelatedField(slug_field="username", read_only=True)

    class Meta:
        model = Evaluation
        fields = [
            "id",
            "name",
            "status",
            "queue",
            "episodes",
            "llm_episodes",
            "done_episodes",
            "current_cell",
            "error",
            "policies",
            "scenarios",
            "tiers",
            "suppliers",
            "seeds",
            "seed_start",
            "replays",
            "prices",
            "sealed",
            "workers",
            "seconds",
            "created_by",
            "started_at",
            "finished_at",
            "created_at",
        ]
        read_only_fields = fields


class EvaluationDetailSerializer(EvaluationSerializer):
    class Meta(EvaluationSerializer.Meta):
        fields = [
            *EvaluationSerializer.Meta.fields,
            "leaderboard",
            "ratings",
            "matrix",
            "supplier_table",
            "exposed",
            "leaderboard_unexposed",
        ]
        read_only_fields = fields


class EvaluationViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet):
    """Stored evaluations: the list, and one with its league tables: the leaderboard (per
    scenario, tier and buyer: mean score with a bootstrap 95 % CI, the paired difference
    against the best with its CI and the tie mark, pass^k, the worst supplier line-up,
    cost, deal rate, buyer share, mutual loss, rounds per deal, invalid-action rate), the
    buyers x suppliers matrix, the suppliers' table, and ratings (mu, sigma, ordinal,
    matches; buyers and suppliers rated apart), and a run's status and progress.
    Read-only: evaluations are started with ``manage.py evaluate`` or the Evaluations
    page."""

    permission_classes = [RolePermission]
    lookup_value_regex = ID_REGEX

    def get_queryset(self):
        if self.action == "retrieve":
            return Evaluation.objects.select_related("created_by")
        return evaluation_list()

    def get_serializer_class(self):
        return EvaluationDetailSerializer if self.action == "retrieve" else EvaluationSerializer
