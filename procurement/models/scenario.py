from __future__ import annotations

from typing import Any

from django.conf import settings
from django.db import models

from procurement.models.stored_json import StoredJSONDecoder
from procurement.validators import validate_scenario_config


class Scenario(models.Model):
    """A difficulty scenario: the engine's ScenarioConfig, stored whole and validated by it.

    ``config`` holds every ScenarioConfig parameter (``model_dump(mode="json")``); the admin
    edits it parameter by parameter. ``version`` grows with every change of the config, and
    episodes keep a snapshot, so history stays reproducible after an edit.
    """

    name = models.SlugField(max_length=100, unique=True)
    description = models.TextField(blank=True)
    is_preset = models.BooleanField(default=False, help_text="Built-in; copy it to edit.")
    preset_name = models.CharField(max_length=100, blank=True)
    config = models.JSONField(decoder=StoredJSONDecoder)
    version = models.PositiveIntegerField(default=1)
    requirement_templates = models.ManyToManyField(
        "procurement.RequirementTemplate", blank=True, related_name="scenarios"
    )
    supplier_profiles = models.ManyToManyField(
        "procurement.SupplierProfile", blank=True, related_name="scenarios"
    )
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-is_preset", "name"]

    def __str__(self) -> str:
        return self.name

    def clean(self) -> None:
        config = self.config
        if config is None:
            return  # a missing config is the field's own "required" error, not the engine's
        if isinstance(config, dict):
            config = {**config, "name": self.name}
        self.config = validate_scenario_config(config)

    def engine_config(self) -> dict[str, Any]:
        """The config the engine runs: the stored one, named after this scenario."""
        return {**self.config, "name": self.name}
