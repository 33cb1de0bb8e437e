"""Reads for the start forms: which scenarios and policies put work on a language model."""

from __future__ import annotations

from procurement.models import PolicyConfig, Scenario
from procurement.models.policy import snapshot_uses_llm


def llm_names() -> dict[str, list[str]]:
    """Scenario names with LLM suppliers and policy names with an LLM buyer: their cells
    go to the gpu queue and take seconds to minutes each instead of milliseconds."""
    return {
        "scenarios": [
            s.name
            for s in Scenario.objects.order_by("name")
            if s.engine_config().get("supplier_llm")
        ],
        "policies": [
            p.name for p in PolicyConfig.objects.order_by("name") if snapshot_uses_llm(p.snapshot())
        ],
    }
