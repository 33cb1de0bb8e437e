"""Django admin: scenario editing validated by the engine, read-only episode history."""

from __future__ import annotations

import json

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import ValidationError
from django.db import models
from django.utils.html import format_html, format_html_join

from negotiation.config import TIERS
from procurement import scenario_form
from procurement.errors import ApplicationError
from procurement.limits import JSONInputField
from procurement.models import (
    Decision,
    Episode,
    Evaluation,
    PolicyConfig,
    RequirementTemplate,
    Scenario,
    SupplierProfile,
    Sweep,
    SweepCell,
    TrainingRun,
)
from procurement.selectors.policies import policy_by_name
from procurement.selectors.references import in_use_message
from procurement.services import episodes as episode_services
from procurement.services import policies as policy_services
from procurement.services import scenarios as scenario_services
from procurement.validators import known_policies, validate_scenario_config

admin.site.site_header = "Procurement Arena"
admin.site.site_title = "Procurement Arena admin"
admin.site.index_title = "Scenarios, policies, runs and people"
admin.site.site_url = "/"


class ProtectResultsAdmin(admin.ModelAdmin):
    """Deleting what results refer to shows the admin's "protected" page, one line per
    object (counts, not the thousands of cells a sweep may have)."""

    def get_deleted_objects(self, objs, request):
        reasons = [reason for obj in objs if (reason := in_use_message(obj=obj))]
        if reasons:
            return [], {}, set(), reasons
        return super().get_deleted_objects(objs, request)

    def delete_queryset(self, request, queryset) -> None:
        for obj in queryset:
            self.delete_model(request, obj)


# How a selected catalogue entry becomes an engine item / roster supplier.
CATALOGUE_SPECS = {
    "items": RequirementTemplate.as_item_spec,
    "supplier_roster": SupplierProfile.as_supplier_spec,
}


class _ScenarioAdminFormBase(forms.ModelForm):
    class Meta:
        model = Scenario
        fields = ["name", "description", "requirement_templates", "supplier_profiles"]

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.config_fields = {n: f for n, f in self.fields.items() if n in CONFIG_FIELD_NAMES}
        instance_config = self.instance.config if self.instance.pk else None
        for name, value in scenario_form.initial_values(instance_config).items():
            if name in self.fields:
                self.initial.setdefault(name, value)

    def clean(self):
        cleaned = super().clean()
        # Start from the stored config, so whatever the form does not show (items and a
        # roster set through the API, say) survives a save unchanged.
        config = dict(self.instance.config or {}) if self.instance.pk else {}
        config.update(scenario_form.config_from_cleaned(cleaned, self.config_fields))
        config["name"] = cleaned.get("name") or "custom"
        config["description"] = cleaned.get("description") or ""
        # A changed catalogue selection becomes the engine's items / supplier roster.
        selected: dict[str, list] = {}
        for key, field in scenario_form.CATALOGUE_FIELDS.items():
            if field in self.changed_data or key not in config:
                selected[key] = list(cleaned.get(field) or [])
                config[key] = [CATALOGUE_SPECS[key](entry) for entry in selected[key]]
        try:
            self.validated_config = validate_scenario_config(config)
        except ValidationError as exc:
            for field, errors in exc.message_dict.items():
                target, label = self._error_target(field, selected)
                for message in errors:
                    self.add_error(target, f"{label}: {message}" if label else message)
        return cleaned

    def _error_target(self, field: str, selected: dict) -> tuple[str | None, str]:
        """The form field an engine error belongs to, and a label for nested paths."""
        parts = field.split(".")
        root = scenario_form.CATALOGUE_FIELDS.get(parts[0], parts[0])
        if parts[0] in selected and len(parts) > 1 and parts[1].isdigit():
            return root, str(selected[parts[0]][int(parts[1])])  # name the catalogue entry
        if root in self.fields:
            return root, "" if root == field else field
        return None, "" if field == "config" else field


# The engine's parameters are declared form fields (generated from ScenarioConfig), so the
# admin's fieldsets may name them.
CONFIG_FIELD_NAMES = tuple(scenario_form.config_fields())
ScenarioAdminForm = type(
    "ScenarioAdminForm", (_ScenarioAdminFormBase,), dict(scenario_form.config_fields())
)


def _copy_at_tier(tier: str):
    def action(modeladmin, request, queryset) -> None:
        for scenario in queryset:
            try:
                copy = scenario_services.scenario_copy(
                    source=scenario, user=request.user, tier=tier
                )
            except ValidationError as exc:
                modeladmin.message_user(request, "; ".join(exc.messages), messages.ERROR)
                return
            modeladmin.message_user(request, f"Copied {scenario.name} at tier {tier}: {copy.name}.")

    return action


@admin.register(Scenario)
class ScenarioAdmin(ProtectResultsAdmin):
    form = ScenarioAdminForm
    list_display = ["name", "is_preset", "preset_name", "version", "summary", "updated_at"]
    list_filter = ["is_preset"]
    search_fields = ["name", "description"]
    actions = ["copy_selected", "run_episode_now"]
    filter_horizontal = ["requirement_templates", "supplier_profiles"]

    def get_fieldsets(self, request, obj=None):
        if obj is not None and not self.has_change_permission(request, obj):
            params = ["parameters"]  # view-only (presets): one read-only table
        else:
            params = list(CONFIG_FIELD_NAMES)
        return [
            (None, {"fields": ["name", "description"]}),
            ("Parameters", {"fields": params}),
            (
                "Catalogue",
                {"fields": ["requirement_templates", "supplier_profiles"], "classes": ["collapse"]},
            ),
        ]

    @admin.display(description="world")
    def summary(self, obj: Scenario) -> str:
        c = obj.config
        return (
            f"{c.get('n_suppliers')} suppliers · {c.get('n_requirements')} requirements · "
            f"{c.get('weeks')} weeks"
        )

    @admin.display(description="parameters")
    def parameters(self, obj: Scenario) -> str:
        config = obj.config or {}
        return format_html(
            "<table>{}</table>",
            format_html_join(
                "",
                "<tr><th>{}</th><td>{}</td></tr>",
                ((name, json.dumps(config.get(name))) for name in CONFIG_FIELD_NAMES),
            ),
        )

    def has_change_permission(self, request, obj=None) -> bool:
        if obj is not None and obj.is_preset:
            return False  # presets are read-only: copy one to edit it
        return super().has_change_permission(request, obj)

    def has_delete_permission(self, request, obj=None) -> bool:
        if obj is not None and obj.is_preset:
            return False
        return super().has_delete_permission(request, obj)

    def delete_model(self, request, obj) -> None:
        scenario_services.scenario_delete(scenario=obj)

    def save_model(self, request, obj, form, change) -> None:
        config = form.validated_config
        if change:
            scenario_services.scenario_update(
                scenario=obj, config=config, description=obj.description
            )
            return
        created = scenario_services.scenario_create(
            name=obj.name, config=config, description=obj.description, user=request.user
        )
        obj.pk = created.pk  # the form saves the catalogue selections onto this row
        obj.refresh_from_db()

    @admin.action(description="Copy selected scenarios (editable copies)")
    def copy_selected(self, request, queryset) -> None:
        for scenario in queryset:
            copy = scenario_services.scenario_copy(source=scenario, user=request.user)
            self.message_user(request, f"Copied {scenario.name} to {copy.name}.")

    def get_actions(self, request):
        actions = super().get_actions(request)
        # One "copy at tier" action per curriculum tier (negotiation.curriculum).
        for tier in TIERS:
            name = f"copy_at_{tier}"
            actions[name] = (_copy_at_tier(tier), name, f"Copy selected at curriculum tier: {tier}")
        return actions

    @admin.action(description="Run an episode now (expert policy, next seed)")
    def run_episode_now(self, request, queryset) -> None:
        policy = policy_by_name(name="expert")
        if policy is None:
            self.message_user(request, "No 'expert' policy: run seed_presets.", messages.ERROR)
            return
        for scenario in queryset:
            try:  # on the next seed this scenario and policy have not played
                episode = episode_services.episode_create(
                    scenario=scenario, policy=policy, user=request.user
                )
            except ApplicationError as exc:
                self.message_user(request, exc.message, messages.ERROR)
                return
            self.message_user(
                request,
                format_html(
                    "Queued episode <a href='/api/episodes/{}/'>#{}</a> on {} (seed {}).",
                    episode.pk,
                    episode.pk,
                    scenario.name,
                    episode.seed,
                ),
            )


class ReadOnlyAdmin(admin.ModelAdmin):
    def has_add_permission(self, request, obj=None) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False

    def has_delete_permission(self, request, obj=None) -> bool:
        return False


@admin.register(Episode)
class EpisodeAdmin(ReadOnlyAdmin):
    list_display = [
        "id",
        "scenario_name",
        "policy_name",
        "seed",
        "status",
        "steps",
        "score",
        "created_at",
    ]
    list_filter = ["status", "scenario_name", "policy_name", "queue"]
    search_fields = ["scenario_name", "policy_name"]
    date_hierarchy = "created_at"


@admin.register(Decision)
class DecisionAdmin(ReadOnlyAdmin):
    list_display = ["episode", "step", "week", "action_type", "valid", "reward", "running_score"]
    list_filter = ["valid", "actor"]
    list_select_related = ["episode"]
    raw_id_fields = ["episode"]


@admin.register(Sweep)
class SweepAdmin(ReadOnlyAdmin):
    list_display = [
        "id",
        "name",
        "status",
        "seeds",
        "total_cells",
        "done_cells",
        "failed_cells",
        "created_at",
    ]
    list_filter = ["status"]


@admin.register(SweepCell)
class SweepCellAdmin(ReadOnlyAdmin):
    list_display = ["sweep", "scenario", "policy", "seed", "status", "score"]
    list_filter = ["status"]
    raw_id_fields = ["sweep", "episode"]


@admin.register(Evaluation)
class EvaluationAdmin(ReadOnlyAdmin):
    """Read-only: evaluations are started from the Evaluations page or manage.py evaluate."""

    list_display = ["id", "name", "status", "queue", "seeds", "episodes", "seconds", "created_at"]
    list_filter = ["status", "queue"]
    search_fields = ["name"]
    exclude = ["outcomes", "pinned"]  # up to 20,000 lines; the cell pages show them


def _lineage_html(lineage: dict | None):
    if not lineage:
        return "—"
    return format_html("<pre>{}</pre>", json.dumps(lineage, indent=2, sort_keys=True))


@admin.register(TrainingRun)
class TrainingRunAdmin(ReadOnlyAdmin):
    """Read-only: runs are started and cancelled from the Training page or manage.py train."""

    list_display = ["name", "kind", "base", "status", "step", "max_steps", "policy", "created_at"]
    list_filter = ["status", "kind"]
    search_fields = ["name", "base"]
    exclude = ["lineage", "metrics"]
    readonly_fields = ["lineage_shown", "last_metrics"]

    @admin.display(description="lineage")
    def lineage_shown(self, obj: TrainingRun):
        return _lineage_html(obj.lineage)

    @admin.display(description="last metrics")
    def last_metrics(self, obj: TrainingRun):
        return _lineage_html(obj.metrics[-1] if obj.metrics else None)


class PolicyConfigAdminForm(forms.ModelForm):
    # A callable: read when a form is built, not when the admin is imported.
    policy = forms.ChoiceField(choices=lambda: [(p, p) for p in known_policies()])

    class Meta:
        model = PolicyConfig
        fields = ["name", "policy", "params", "backend", "model", "description"]


@admin.register(PolicyConfig)
class PolicyConfigAdmin(ProtectResultsAdmin):
    """Params are validated against the policy's own schema (the model's clean()), and
    saves go through the policy services, which keep the version."""

    form = PolicyConfigAdminForm
    list_display = ["name", "policy", "version", "backend", "model"]
    formfield_overrides = {models.JSONField: {"form_class": JSONInputField}}  # no NUL

    def get_readonly_fields(self, request, obj=None):
        return ["name", "version", "lineage"] if obj is not None else ["version"]

    @admin.display(description="lineage (trained here)")
    def lineage(self, obj: PolicyConfig):
        run = obj.training_runs.order_by("-pk").first()
        return _lineage_html(run.lineage if run is not None else None)

    def save_model(self, request, obj, form, change) -> None:
        data = {f: form.cleaned_data[f] for f in policy_services.EDITABLE_FIELDS}
        if change:
            policy_services.policy_update(policy_config=obj, **data)
            return
        obj.pk = policy_services.policy_create(name=obj.name, **data).pk
        obj.refresh_from_db()

    def delete_model(self, request, obj) -> None:
        policy_services.policy_delete(policy_config=obj)


@admin.register(RequirementTemplate)
class RequirementTemplateAdmin(admin.ModelAdmin):
    list_display = [
        "name",
        "category",
        "unit",
        "typical_unit_price",
        "order_qty_min",
        "order_qty_max",
    ]
    list_filter = ["category"]
    search_fields = ["name", "key"]


@admin.register(SupplierProfile)
class SupplierProfileAdmin(admin.ModelAdmin):
    list_display = ["name", "persona", "categories", "lead_time_weeks"]
    list_filter = ["persona"]
