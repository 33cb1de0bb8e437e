"""Request/response shapes. Validation lives here and in the engine, never in views."""

from __future__ import annotations

from django.core.exceptions import ValidationError as DjangoValidationError
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from negotiation.action_spec import MAX_MESSAGE
from negotiation.metrics import shown_metrics
from procurement import validators
from procurement.limits import MAX_ID, MAX_SEED, MAX_SEEDS_PER_SWEEP, MAX_STEP_DELAY
from procurement.models import ApprovalStatus, Decision, Episode, PolicyConfig, Scenario, Sweep
from procurement.roles import ROLES
from procurement.selectors import live as live_selectors
from procurement.selectors.scenarios import scenario_config_view
from procurement.services import policies as policy_services


class ScenarioConfigField(serializers.JSONField):
    """A scenario config as the request's user may read it: hidden supplier settings
    scrubbed for everyone but admins (selectors.scenarios.scenario_config_view)."""

    def to_representation(self, value):
        request = self.context.get("request")
        user = getattr(request, "user", None)
        return scenario_config_view(super().to_representation(value), user=user)


class ScenarioSerializer(serializers.ModelSerializer):
    config = ScenarioConfigField(
        help_text="Every ScenarioConfig parameter; omitted ones take the engine's defaults. "
        "A named supplier's persona reads 'hidden' except to admins."
    )

    class Meta:
        model = Scenario
        fields = [
            "id",
            "name",
            "description",
            "is_preset",
            "preset_name",
            "config",
            "version",
            "created_at",
            "updated_at",
        ]
        read_only_fields = ["is_preset", "preset_name", "version", "created_at", "updated_at"]

    def validate_name(self, value: str) -> str:
        if self.instance is not None and value != self.instance.name:
            raise serializers.ValidationError(
                "A scenario cannot be renamed (episodes refer to it by name): copy it instead."
            )
        return value

    def validate_config(self, value):
        name = self.initial_data.get("name") if isinstance(self.initial_data, dict) else None
        name = name if isinstance(name, str) and name else None
        name = name or (self.instance.name if self.instance else "custom")
        if isinstance(value, dict):
            value = {**value, "name": name}
        try:
            return validators.validate_scenario_config(value)
        except DjangoValidationError as exc:
            errors = exc.message_dict
            if list(errors) == ["config"]:  # the config as a whole, not one parameter
                raise serializers.ValidationError(errors["config"]) from None
            raise serializers.ValidationError(errors) from None


class PresetSerializer(serializers.Serializer):
    name = serializers.CharField()
    description = serializers.CharField(allow_blank=True)
    config = serializers.JSONField()  # presets name no suppliers: nothing hidden


class PolicyConfigSerializer(serializers.ModelSerializer):
    params_schema = serializers.SerializerMethodField(
        help_text="JSON schema of this policy's params (null for an unknown policy)."
    )

    class Meta:
        model = PolicyConfig
        fields = [
            "id",
            "name",
            "policy",
            "params",
            "params_schema",
            "backend",
            "model",
            "description",
            "version",
            "uses_llm",
        ]
        read_only_fields = ["version", "uses_llm"]

    @extend_schema_field(OpenApiTypes.OBJECT)
    def get_params_schema(self, obj: PolicyConfig) -> dict | None:
        if obj.policy not in validators.known_policies():
            return None
        return validators.params_model(obj.policy).model_json_schema()

    def validate_name(self, value: str) -> str:
        if self.instance is not None and value != self.instance.name:
            raise serializers.ValidationError(
                "A policy cannot be renamed (results refer to it by name): create a new one."
            )
        return value

    def validate(self, attrs):
        merged = {
            f: attrs.get(f, getattr(self.instance, f, "" if f != "params" else {}))
            for f in policy_services.RUN_FIELDS
        }
        try:
            attrs["params"] = validators.validate_policy_config(**merged)
        except DjangoValidationError as exc:
            raise serializers.ValidationError(exc.message_dict) from None
        return attrs


class EpisodeSerializer(serializers.ModelSerializer):
    duration_seconds = serializers.FloatField(read_only=True, allow_null=True)
    metrics = serializers.SerializerMethodField(
        help_text="The final metrics; buyer_share and rounds_per_deal are null when the "
        "episode closed no deal."
    )
    seed = serializers.IntegerField(
        source="shown_seed",
        read_only=True,
        allow_null=True,
        help_text="null while a sealed episode (a person's seat) plays; shown once it ends.",
    )

    class Meta:
        model = Episode
        fields = [
            "id",
            "scenario",
            "scenario_name",
            "scenario_version",
            "policy",
            "policy_name",
            "policy_version",
            "seed",
            "sealed",
            "status",
            "queue",
            "sweep",
            "steps",
            "score",
            "metrics",
            "error",
            "attempts",
            "created_at",
            "started_at",
            "finished_at",
            "duration_seconds",
            "engine_seconds",
        ]
        read_only_fields = fields

    @extend_schema_field(OpenApiTypes.OBJECT)
    def get_metrics(self, episode: Episode) -> dict:
        return shown_metrics(episode.metrics or {})


class WaitingSerializer(serializers.Serializer):
    state = serializers.ChoiceField(["queued", "loading_model", "thinking"])
    lane = serializers.CharField(help_text='"rule" or "model": the line the run waits in.')
    position = serializers.IntegerField(
        allow_null=True, help_text="Its place in its lane's line (1: next); null when unknown."
    )
    text = serializers.CharField(help_text='In words: "2nd in the model lane", "thinking".')


class EpisodeDetailSerializer(EpisodeSerializer):
    waiting = serializers.SerializerMethodField(
        help_text="What the run waits for now (its place in its lane, its model loading or "
        "thinking); null when nothing."
    )
    scenario_snapshot = ScenarioConfigField(read_only=True)

    class Meta(EpisodeSerializer.Meta):
        fields = [
            *EpisodeSerializer.Meta.fields,
            "waiting",
            "scenario_snapshot",
            "policy_snapshot",
        ]
        read_only_fields = fields

    @extend_schema_field(WaitingSerializer(allow_null=True))
    def get_waiting(self, episode: Episode) -> dict | None:
        return live_selectors.episode_waiting(episode)


class NameOrIdField(serializers.SlugRelatedField):
    """A scenario or policy by its name or by its id, the same everywhere in the API."""

    def __init__(self, **kwargs) -> None:
        super().__init__(slug_field="name", **kwargs)

    def to_internal_value(self, data):
        if isinstance(data, int) and not isinstance(data, bool):
            found = self.get_queryset().filter(pk=data).first() if 0 < data <= MAX_ID else None
            if found is None:
                self.fail("does_not_exist", slug_name="id", value=data)
            return found
        return super().to_internal_value(data)


class EpisodeCreateSerializer(serializers.Serializer):
    scenario = NameOrIdField(queryset=Scenario.objects.all())
    policy = NameOrIdField(queryset=PolicyConfig.objects.all())
    seed = serializers.IntegerField(
        min_value=0,
        max_value=MAX_SEED,
        required=False,
        help_text="Omit for the next seed this scenario and policy have not played. A human "
        "seat's seed is drawn by the server: giving one is refused.",
    )
    step_delay = serializers.FloatField(
        min_value=0,
        max_value=MAX_STEP_DELAY,
        default=0,
        help_text="Seconds between decisions: 0 plays at engine speed, more paces a live "
        "episode for watching. An episode that uses a language model plays at the model's "
        "pace (0).",
    )


class HumanMoveSerializer(serializers.Serializer):
    step = serializers.IntegerField(
        min_value=0,
        max_value=MAX_ID,
        help_text="The step this move plays: the number of decisions stored so far (0 for "
        "the first move), as you saw it. A move for any other step (resent, doubled or "
        "stale) is refused with 409 and the next_step; nothing is played twice.",
    )
    action = serializers.JSONField(
        help_text='One buyer action, e.g. {"action_type": "negotiate", "supplier_id": "S01", '
        '"requirement_id": "R01", "price": 12.5}.'
    )


class SupplierSeatStartSerializer(serializers.Serializer):
    scenario = NameOrIdField(queryset=Scenario.objects.all())
    policy = NameOrIdField(
        queryset=PolicyConfig.objects.all(), help_text="The buyer: any stored policy, LLM or rule."
    )
    supplier_id = serializers.CharField(
        max_length=32,
        required=False,
        allow_blank=True,
        help_text="The supplier the analyst plays (e.g. S01); omitted: the first one.",
    )
    seed = serializers.IntegerField(
        min_value=0,
        max_value=MAX_SEED,
        required=False,
        help_text="Omit for a seed the server draws. The world is drawn under the server's "
        "key either way: the seed rebuilds nothing of the buyer's side.",
    )
    idle_seconds = serializers.IntegerField(
        min_value=30,
        max_value=3600,
        default=600,
        help_text="An offer unanswered this long passes the seat to the rule supplier.",
    )


class SupplierAnswerSerializer(serializers.Serializer):
    step = serializers.IntegerField(
        min_value=0, max_value=MAX_ID, help_text="The step of the offer this answers."
    )
    decision = serializers.ChoiceField(choices=["accept", "counter", "walk_away"])
    price = serializers.FloatField(
        required=False,
        allow_null=True,
        min_value=0.01,
        max_value=1e9,
        help_text="A counter's unit price (an accept takes the buyer's offer).",
    )
    message = serializers.CharField(
        max_length=MAX_MESSAGE, required=False, allow_blank=True, default="", trim_whitespace=True
    )


class RefusedMoveSerializer(serializers.Serializer):
    detail = serializers.CharField()
    code = serializers.CharField()
    message = serializers.CharField()
    field = serializers.CharField(allow_null=True)


class DecisionSerializer(serializers.ModelSerializer):
    class Meta:
        model = Decision
        fields = [*Decision.STORED_FIELDS, "created_at"]
        read_only_fields = fields


class StandingRefusalSerializer(serializers.Serializer):
    by = serializers.CharField(help_text="Who refused.")
    at = serializers.CharField(help_text="When (ISO 8601).")
    step = serializers.IntegerField(help_text="The step of the refused escalation.")


class ApprovalSerializer(serializers.Serializer):
    """An escalation that asked for an answer, and the answer (selectors.approvals)."""

    episode = serializers.IntegerField()
    step = serializers.IntegerField()
    status = serializers.CharField(help_text="One of " + ", ".join(ApprovalStatus.values) + ".")
    requirement_id = serializers.CharField(allow_null=True)
    supplier_id = serializers.CharField(allow_null=True)
    rationale = serializers.CharField(allow_null=True)
    stake = serializers.FloatField(
        allow_null=True,
        help_text="Money at stake, in the scenario's units: the PR's amount, or the standing "
        "counter x the quantity still needed; null when the engine would refuse the action.",
    )
    subject = serializers.CharField(
        help_text="What the approver decides on, in words: the PR, or the thread and counter."
    )
    requested_at = serializers.DateTimeField(allow_null=True)
    deadline = serializers.DateTimeField()
    decided_by = serializers.CharField(allow_null=True, help_text="The person; null: automatic.")
    decided_at = serializers.DateTimeField(allow_null=True)
    answered_by = serializers.CharField(
        allow_null=True, help_text="Who answered as the decision records it (a person or the rule)."
    )
    reason = serializers.CharField(help_text="Why this answer, automatic ones included.")
    standing_refusal = StandingRefusalSerializer(
        allow_null=True, help_text="The earlier refusal on this requirement it repeats."
    )
    approver_role = serializers.ChoiceField(list(ROLES), help_text="The lowest role that answers.")
    approvers = serializers.CharField(help_text='In words: "ops or admins".')
    barred = serializers.DictField(
        child=serializers.CharField(),
        help_text="Usernames that may not answer whatever their role (the starter; a "
        "standing refusal's refuser in its review) -> why.",
    )


class ReplaySerializer(serializers.Serializer):
    episode_id = serializers.IntegerField()
    steps = serializers.IntegerField()
    stored_score = serializers.FloatField(allow_null=True)
    replayed_score = serializers.FloatField()
    matches = serializers.BooleanField()


class SweepSerializer(serializers.ModelSerializer):
    progress = serializers.FloatField(read_only=True)
    scenarios = serializers.SlugRelatedField(slug_field="name", many=True, read_only=True)
    policies = serializers.SlugRelatedField(slug_field="name", many=True, read_only=True)

    class Meta:
        model = Sweep
        fields = [
            "id",
            "name",
            "scenarios",
            "policies",
            "seeds",
            "seed_start",
            "status",
            "total_cells",
            "done_cells",
            "failed_cells",
            "progress",
            "created_at",
            "started_at",
            "finished_at",
            "error",
        ]
        read_only_fields = fields


class SweepDetailSerializer(SweepSerializer):
    class Meta(SweepSerializer.Meta):
        fields = [*SweepSerializer.Meta.fields, "summary"]
        read_only_fields = fields


class SweepCreateSerializer(serializers.Serializer):
    name = serializers.CharField(max_length=200, required=False, allow_blank=True, default="")
    scenarios = NameOrIdField(many=True, queryset=Scenario.objects.all(), allow_empty=False)
    policies = NameOrIdField(many=True, queryset=PolicyConfig.objects.all(), allow_empty=False)
    seeds = serializers.IntegerField(min_value=1, max_value=MAX_SEEDS_PER_SWEEP)
    seed_start = serializers.IntegerField(min_value=0, max_value=MAX_SEED, default=0)

    def validate(self, attrs):
        # The grid's size and seed range are sweep_create's rule (the commands share it).
        for field in ("scenarios", "policies"):
            if len({o.pk for o in attrs[field]}) != len(attrs[field]):
                raise serializers.ValidationError({field: ["Each entry may appear only once."]})
        return attrs


class ChatMessageSerializer(serializers.Serializer):
    role = serializers.ChoiceField(choices=["system", "user", "assistant"])
    content = serializers.CharField()


class DatasetRecordSerializer(serializers.Serializer):
    """One line of a training-data export (documentation only: the records stream)."""

    messages = ChatMessageSerializer(many=True, help_text="system, user, assistant: for SFT.")
    prompt = ChatMessageSerializer(many=True, help_text="system, user: the LLM buyer's prompt.")
    completion = ChatMessageSerializer(many=True, help_text="assistant: the action as JSON.")
    reward = serializers.FloatField(help_text="The step's reward.")
    score = serializers.FloatField(help_text="The episode's score.")
    valid = serializers.BooleanField(help_text="Whether the engine accepted the action.")
    actor = serializers.CharField(help_text="policy, llm, fallback:<policy> or human.")
    episode_id = serializers.IntegerField()
    scenario = serializers.CharField()
    policy = serializers.CharField()
    seed = serializers.IntegerField()
    step = serializers.IntegerField()
