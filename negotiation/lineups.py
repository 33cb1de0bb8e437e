"""Supplier line-ups: who sits across the table in an evaluation's cross-play matrix.

A line-up is a name, applied to a scenario's config:
- ``scenario``: the suppliers as the scenario configures them;
- a rule persona (``hardball``) or a field persona (a negmas negotiator): the bilateral
  seller plays it, or every arena supplier does;
- ``llm:<model>`` or ``llm:<backend>:<model>``: a language model plays the scenario's own
  rule personas (``llm:smollm2``, ``llm:openai_compatible:http://127.0.0.1:8011``);
  the backend defaults to transformers.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .config import FIELD_PERSONAS, PERSONAS, ScenarioConfig, field_persona_error

AS_CONFIGURED = "scenario"
LLM_PREFIX = "llm:"
LLM_BACKENDS = ("transformers", "vllm", "openai_compatible", "llamacpp")


@dataclass(frozen=True)
class Lineup:
    name: str
    persona: str | None = None  # rule or field persona every supplier plays
    backend: str | None = None  # set: a language model plays the suppliers
    model: str = ""

    @property
    def uses_llm(self) -> bool:
        return self.backend is not None


def parse_lineup(name: str) -> Lineup:
    """The line-up a name means; ValueError says why a name means none."""
    if name == AS_CONFIGURED:
        return Lineup(name)
    if name.startswith(LLM_PREFIX):
        rest = name[len(LLM_PREFIX) :]
        backend, model = "transformers", rest
        head, sep, tail = rest.partition(":")
        if sep and head in LLM_BACKENDS:
            backend, model = head, tail
        if not model.strip():
            raise ValueError(f"'{name}' names no model; e.g. llm:smollm2")
        return Lineup(name, backend=backend, model=model.strip())
    if name in PERSONAS:
        return Lineup(name, persona=name)
    if name in FIELD_PERSONAS:
        if msg := field_persona_error(name):
            raise ValueError(msg)
        return Lineup(name, persona=name)
    known = ", ".join([AS_CONFIGURED, *PERSONAS, *FIELD_PERSONAS, "llm:<model>"])
    raise ValueError(f"Unknown supplier line-up '{name}'; use one of {known}.")


def apply_lineup(cfg: ScenarioConfig, lineup: Lineup) -> ScenarioConfig:
    """``cfg`` with its suppliers replaced by the line-up (the world is otherwise the
    same: the seed draws the same items, budgets and costs)."""
    if lineup.name == AS_CONFIGURED:
        return cfg
    data: dict[str, Any] = cfg.model_dump(mode="json")
    if lineup.persona is not None:
        data["supplier_llm"] = None
        if cfg.mode == "bilateral":
            data["bilateral_persona"] = lineup.persona
        else:
            data["persona_mix"] = {lineup.persona: 1.0}
            data["supplier_roster"] = [
                {**s, "persona": lineup.persona} if lineup.persona in PERSONAS else s
                for s in data["supplier_roster"]
            ]
    else:
        if cfg.mode == "bilateral":
            played = [cfg.bilateral_persona]
        else:
            played = [p for p, w in cfg.persona_mix.items() if w > 0]
        personas = [p for p in played if p in PERSONAS] or ["hardball"]
        if cfg.mode == "bilateral" and cfg.bilateral_persona not in PERSONAS:
            data["bilateral_persona"] = personas[0]
        data["supplier_llm"] = {
            "backend": lineup.backend,
            "model": lineup.model,
            "personas": personas,
        }
    return ScenarioConfig.model_validate(data)


def opponent_label(cfg: ScenarioConfig, scenario_label: str) -> str:
    """The supplier player of a scenario as configured: its bilateral seller's persona,
    or its arena's supplier mix."""
    if cfg.mode == "bilateral":
        return f"persona:{cfg.bilateral_persona}"
    return f"mix:{scenario_label}"
