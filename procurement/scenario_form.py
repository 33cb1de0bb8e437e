"""A Django form field per ScenarioConfig parameter, derived from the engine's model.

The admin edits scenarios parameter by parameter, and the engine's own validation
(ScenarioValidationError) is reported on the field it concerns.
"""

from __future__ import annotations

import types
import typing
from typing import Any

from django import forms
from pydantic.fields import FieldInfo

from negotiation import ScenarioConfig
from negotiation.config import allowed_values
from procurement.limits import JSONInputField

# The model's own fields, and the catalogue lists, which come from the selected
# requirement templates and supplier profiles.
EXCLUDED = {"name", "description", "items", "supplier_roster"}
CATALOGUE_FIELDS = {"items": "requirement_templates", "supplier_roster": "supplier_profiles"}


def _bounds(info: FieldInfo) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for meta in info.metadata:
        for attr, key in (("ge", "min_value"), ("le", "max_value"), ("gt", "min_value")):
            if getattr(meta, attr, None) is not None:
                out[key] = getattr(meta, attr)
    return out


def formfield_for(name: str, info: FieldInfo) -> forms.Field:
    annotation = info.annotation
    optional = False
    if typing.get_origin(annotation) in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(annotation) if a is not type(None)]
        optional = len(args) < len(typing.get_args(annotation))
        annotation = args[0] if len(args) == 1 else annotation
    label = name.replace("_", " ").capitalize()
    help_text = f"{info.description or ''} Allowed: {allowed_values(info)}.".strip()
    common = {"label": label, "help_text": help_text, "required": False}
    if typing.get_origin(annotation) is typing.Literal:
        choices = [(v, v) for v in typing.get_args(annotation)]
        if optional:
            choices = [("", "(none)"), *choices]
        return forms.ChoiceField(choices=choices, **common)
    if annotation is bool:
        return forms.BooleanField(**common)
    if annotation is int:
        return forms.IntegerField(**common, **_bounds(info))
    if annotation is float:
        return forms.FloatField(**common, **_bounds(info))
    if annotation is str:
        return forms.CharField(**common)
    return JSONInputField(**common)  # lists, dicts and nested models


def config_fields() -> dict[str, forms.Field]:
    return {
        name: formfield_for(name, info)
        for name, info in ScenarioConfig.model_fields.items()
        if name not in EXCLUDED
    }


def initial_values(config: dict[str, Any] | None) -> dict[str, Any]:
    defaults = ScenarioConfig().model_dump(mode="json")
    return {k: v for k, v in {**defaults, **(config or {})}.items() if k not in EXCLUDED}


def config_from_cleaned(cleaned: dict[str, Any], fields: dict[str, forms.Field]) -> dict:
    """Form values back to a config dict; empty optional values fall back to defaults."""
    defaults = ScenarioConfig().model_dump(mode="json")
    config: dict[str, Any] = {}
    for name, field in fields.items():
        value = cleaned.get(name)
        if value in (None, "") and not isinstance(field, forms.BooleanField):
            info = ScenarioConfig.model_fields[name]
            value = None if _is_optional(info) else defaults.get(name)
        config[name] = value
    return config


def _is_optional(info: FieldInfo) -> bool:
    return type(None) in typing.get_args(info.annotation) and info.default is None
