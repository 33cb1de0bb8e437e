"""Buyer policy registry: the rule policies and the LLM buyer (``llm``)."""

from __future__ import annotations

from typing import Any

from .base import DecisionMeta, Policy
from .expert import ExpertPolicy
from .human import HumanPolicy, HumanSeatError
from .llm_buyer import LLMBuyerPolicy
from .params import PolicyParams, PolicyParamsError, validate_params
from .random import RandomPolicy
from .scripts import (
    ConcedeFastPolicy,
    ConcedeMidPolicy,
    ConcedeSlowPolicy,
    LowballAwardPolicy,
    LowballFinalPolicy,
    TitForTatPolicy,
)
from .simple import AlwaysAcceptPolicy, DoNothingPolicy, GreedyLowballPolicy

_REGISTRY: dict[str, type[Policy]] = {
    "expert": ExpertPolicy,
    "random": RandomPolicy,
    "always_accept": AlwaysAcceptPolicy,
    "greedy_lowball": GreedyLowballPolicy,
    "do_nothing": DoNothingPolicy,
    "script_lowball_award": LowballAwardPolicy,
    "script_lowball_final": LowballFinalPolicy,
    "script_concede_2pct": ConcedeSlowPolicy,
    "script_concede_5pct": ConcedeMidPolicy,
    "script_concede_10pct": ConcedeFastPolicy,
    "script_tit_for_tat": TitForTatPolicy,
    "llm": LLMBuyerPolicy,
    "human": HumanPolicy,
}


# Policies that read the hidden world: benchmarks construct them directly, and every name
# lookup (API, dashboard, leaderboards, commands) refuses them with this reason.
MEASUREMENT_ONLY: dict[str, str] = {
    "oracle": "The oracle reads the hidden world (reservations, tactics) and is for "
    "benchmarks only (bench/quality.py); it cannot play episodes here.",
    "oracle_safe_open": "The safe-opening oracle reads the hidden world (reservations, "
    "tactics) and is for benchmarks only (bench/quality.py); it cannot play episodes here.",
}


def register_policy(name: str, cls: type[Policy]) -> None:
    """Lets the LLM layer (or a plugin) add policies without touching this module."""
    _REGISTRY[name] = cls


def list_policies() -> list[str]:
    return list(_REGISTRY)


def _policy_class(name: str) -> type[Policy]:
    if name in MEASUREMENT_ONLY:
        raise ValueError(MEASUREMENT_ONLY[name])
    try:
        return _REGISTRY[name]
    except KeyError:
        raise ValueError(f"Unknown policy '{name}'; use one of {', '.join(_REGISTRY)}.") from None


def policy_params_model(name: str) -> type[PolicyParams]:
    """The pydantic model of the named policy's parameters (ValueError if unknown)."""
    return _policy_class(name).Params


def validate_policy_params(name: str, params: Any) -> dict[str, Any]:
    """``params`` checked against the policy's own schema; raises PolicyParamsError."""
    return validate_params(name, policy_params_model(name), params)


def get_policy(name: str, seed: int = 0, **params: Any) -> Policy:
    cls = _policy_class(name)
    p = cls(seed=seed, **validate_params(name, cls.Params, params))
    p.name = name
    return p


__all__ = [
    "MEASUREMENT_ONLY",
    "DecisionMeta",
    "HumanSeatError",
    "Policy",
    "PolicyParams",
    "PolicyParamsError",
    "get_policy",
    "list_policies",
    "policy_params_model",
    "register_policy",
    "validate_policy_params",
]
