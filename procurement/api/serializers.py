"""Request/response shapes. Validation lives here and in the engine, never in views."""

from __future__ import annotations

from django.core.exceptions import ValidationError as DjangoValidationError
from rest_framework import serializers

from negotiation import list_policies
from procurement.models import Decision, Episode, PolicyConfig, Scenario, Sweep
from procurement.services.scenarios import validate_scenario_config

MAX_SEED = 2**62
MAX_SWEEP_CELLS = 20_000


class ScenarioSerializer(serializers.ModelSerializer):
    config = serializers.JSONField(
        help_text="Every ScenarioConfig parameter; omitted ones take the engine's defaults."
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
            return validate_scenario_config(value)
        except DjangoValidationError as exc:
            errors = exc.message_dict
            if list(errors) == ["config"]:  # the config as a whole, not one parameter
                raise serializers.ValidationError(errors["config"]) from None
            raise serializers.ValidationError(errors) from None


class PresetSerializer(serializers.Serializer):
    name = serializers.CharField()
    description = serializers.CharField(allow_blank=True)
    config = serializers.JSONField()


class PolicyConfigSerializer(serializers.ModelSerializer):
    class Meta:
        model = PolicyConfig
        fields = ["id", "name", "policy", "params", "backend", "model", "description", "uses_llm"]
        read_only_fields = ["uses_llm"]

    def validate_policy(self, value: str) -> str:
        known = [*list_policies(), "llm"]
        if value not in known:
            raise serializers.ValidationError(f"Unknown policy; use one of {', '.join(known)}.")
        return value

    def validate_params(self, value):
        if not isinstance(value, dict):
            raise serializers.ValidationError("Must be a JSON object.")
        return value

    def validate(self, attrs):
        policy = attrs.get("policy", getattr(self.instance, "policy", ""))
        backend = attrs.get("backend", getattr(self.instance, "backend", ""))
        model = attrs.get("model", getattr(self.instance, "model", ""))
        if policy == "llm" and not (backend and model):
            raise serializers.ValidationError(
                {"backend": ["An llm policy needs a backend and a model."]}
            )
        return attrs


class EpisodeSerializer(serializers.ModelSerializer):
    duration_seconds = serializers.FloatField(read_only=True, allow_null=True)

    class Meta:
        model = Episode
        fields = [
            "id",
            "scenario",
            "scenario_name",
            "scenario_version",
            "policy",
            "policy_name",
            "seed",
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


class EpisodeDetailSerializer(EpisodeSerializer):
    class Meta(EpisodeSerializer.Meta):
        fields = [*EpisodeSerializer.Meta.fields, "scenario_snapshot", "policy_snapshot"]
        read_only_fields = fields


class EpisodeCreateSerializer(serializers.Serializer):
    scenario = serializers.PrimaryKeyRelatedField(queryset=Scenario.objects.all())
    policy = serializers.SlugRelatedField(slug_field="name", queryset=PolicyConfig.objects.all())
    seed = serializers.IntegerField(min_value=0, max_value=MAX_SEED, default=0)


class DecisionSerializer(serializers.ModelSerializer):
    class Meta:
        model = Decision
        fields = [*Decision.RECORD_FIELDS, "actor", "created_at"]
        read_only_fields = fields


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
    scenarios = serializers.SlugRelatedField(
        slug_field="name", many=True, queryset=Scenario.objects.all(), allow_empty=False
    )
    policies = serializers.SlugRelatedField(
        slug_field="name", many=True, queryset=PolicyConfig.objects.all(), allow_empty=False
    )
    seeds = serializers.IntegerField(min_value=1, max_value=10_000)
    seed_start = serializers.IntegerField(min_value=0, max_value=MAX_SEED, default=0)

    def validate(self, attrs):
        for field in ("scenarios", "policies"):
            if len({o.pk for o in attrs[field]}) != len(attrs[field]):
                raise serializers.ValidationError({field: ["Each entry may appear only once."]})
        cells = len(attrs["scenarios"]) * len(attrs["policies"]) * attrs["seeds"]
        if cells > MAX_SWEEP_CELLS:
            raise serializers.ValidationError(
                {"seeds": [f"{cells} cells is too many; the limit is {MAX_SWEEP_CELLS}."]}
            )
        return attrs
