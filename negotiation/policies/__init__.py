"""Buyer policy registry."""

from __future__ import annotations

from typing import Any

from .base import Policy
from .expert import ExpertPolicy
from .random import RandomPolicy
from .simple import AlwaysAcceptPolicy, DoNothingPolicy, GreedyLowballPolicy

_REGISTRY: dict[str, type[Policy]] = {
    "expert": ExpertPolicy,
    "random": RandomPolicy,
    "always_accept": AlwaysAcceptPolicy,
    "greedy_lowball": GreedyLowballPolicy,
    "do_nothing": DoNothingPolicy,
}


def register_policy(name: str, cls: type[Policy]) -> None:
    """Lets the LLM layer (or a plugin) add policies without touching this module."""
    _REGISTRY[name] = cls


def list_policies() -> list[str]:
    return list(_REGISTRY)


def get_policy(name: str, seed: int = 0, **params: Any) -> Policy:
    try:
        cls = _REGISTRY[name]
    except KeyError:
        raise ValueError(f"Unknown policy '{name}'; use one of {', '.join(_REGISTRY)}.") from None
    p = cls(seed=seed, **params)
    p.name = name
    return p


__all__ = ["Policy", "get_policy", "list_policies", "register_policy"]
