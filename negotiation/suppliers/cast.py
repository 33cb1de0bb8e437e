"""Who answers for each supplier persona of a scenario: the rule persona by default, a
FieldSupplierPolicy per field persona, the LLM supplier for the personas ``supplier_llm``
names. The LLM package is imported only when a scenario has LLM suppliers."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol

from ..config import FIELD_PERSONAS, ScenarioConfig
from .rule import SupplierPolicy

if TYPE_CHECKING:
    from ..llm.backend import ChatRequest, ChatResult


class ModelBackend(Protocol):
    """A language-model backend as the engine hands it through (``llm.LLMBackend``), typed
    structurally so the engine core never imports the llm package."""

    def generate(self, requests: Sequence[ChatRequest]) -> list[ChatResult]: ...


def supplier_policies(
    cfg: ScenarioConfig, llm_backend: ModelBackend | None
) -> dict[str, SupplierPolicy]:
    """persona -> its policy where it is not a rule persona: the LLM supplier policy for
    the personas ``supplier_llm`` names, a FieldSupplierPolicy for each field persona the
    scenario plays. Every other supplier keeps its rule persona; rule-only scenarios load
    nothing (negmas is imported only when a field supplier first answers)."""
    policies = _field_policies(cfg)
    spec = cfg.supplier_llm
    if spec is None or not cfg.plays_llm_suppliers():
        return policies
    from ..llm import resolve_backend
    from .llm_supplier import LLMSupplierPolicy

    backend: Any = llm_backend or spec.backend
    policy = LLMSupplierPolicy(resolve_backend(backend, spec.model))
    return {**policies, **dict.fromkeys(spec.personas, policy)}


def _field_policies(cfg: ScenarioConfig) -> dict[str, SupplierPolicy]:
    """One FieldSupplierPolicy per field persona this env's suppliers can have (it keeps
    per-thread negotiation state, so it is never shared between envs)."""
    if cfg.mode == "bilateral":
        named = {cfg.bilateral_persona}
    else:
        named = {p for p, w in cfg.persona_mix.items() if w > 0}
    wanted = sorted(named.intersection(FIELD_PERSONAS))
    if not wanted:
        return {}
    from .field import FIELD_STRATEGIES

    return {p: FIELD_STRATEGIES[p]() for p in wanted}
