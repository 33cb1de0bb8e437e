"""Reads for the start forms: which scenarios and policies put work on a language model."""

from __future__ import annotations

import typing
from typing import Any

from negotiation.policies.action_schema import ACTION_MODELS
from procurement.models import PolicyConfig, Scenario
from procurement.run_plan import buyer_uses_llm, suppliers_use_llm


def llm_names() -> dict[str, list[str]]:
    """Scenario names with LLM suppliers and policy names with an LLM buyer: their cells
    go to the gpu queue and take seconds to minutes each instead of milliseconds."""
    return {
        "scenarios": [
            s.name
            for s in Scenario.objects.order_by("name")
            if suppliers_use_llm(s.engine_config())
        ],
        "policies": [
            p.name for p in PolicyConfig.objects.order_by("name") if buyer_uses_llm(p.snapshot())
        ],
    }


def action_form_spec() -> list[dict[str, Any]]:
    """The seven buyer actions as form fields (from the action schema the LLM buyer uses):
    [{"action_type", "fields": [{"name", "kind", "required"}]}]. ``kind`` is supplier,
    requirement, number, integer or text, so the page can offer the right input."""
    spec = []
    for model in ACTION_MODELS:
        fields = []
        for name, info in model.model_fields.items():
            if name == "action_type":
                continue
            if name.endswith("supplier_id"):
                kind = "supplier"
            elif name == "requirement_id":
                kind = "requirement"
            elif name in ("message", "rationale"):
                kind = "text"
            elif name == "quantity":
                kind = "integer"
            else:
                kind = "number"
            fields.append({"name": name, "kind": kind, "required": info.is_required()})
        action_type = typing.get_args(model.model_fields["action_type"].annotation)[0]
        spec.append({"action_type": action_type, "fields": fields})
    return spec
