"""Reads for episodes and decisions."""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet

from procurement.models import Decision, Episode


def episode_list() -> QuerySet[Episode]:
    """Episodes for listings (the API's FilterSet narrows them): snapshots left out."""
    return Episode.objects.defer("scenario_snapshot", "policy_snapshot")


def episode_decisions(episode: Episode) -> QuerySet[Decision]:
    return episode.decisions.order_by("step")


class StateUnavailable(Exception):
    """The public state of a past step cannot be derived (the message says why)."""


class NoSuchStep(ValueError):
    pass


def public_state_at(episode: Episode, step: int) -> dict[str, Any]:
    """What the buyer saw after decision ``step`` (-1: before the first), derived by
    replaying the stored actions through the pinned scenario: the engine is deterministic,
    so nothing per step needs storing. Public state only: the observation never carries
    reservations, tactics or stress.
    """
    from negotiation import ProcurementEnv, load_scenario

    if not -1 <= step < episode.steps:
        raise NoSuchStep(f"step must be between -1 and {episode.steps - 1}; got {step}.")
    config = load_scenario(episode.scenario_snapshot)
    if config.supplier_llm is not None and config.supplier_llm.personas:
        raise StateUnavailable(
            "Its suppliers are language models: a past step's boards would need the model "
            "again. The decision timeline holds every step."
        )
    env = ProcurementEnv(config)
    observation = env.reset(seed=episode.seed)
    actions = episode_decisions(episode).filter(step__lte=step).values_list("action", flat=True)
    for action in actions.iterator(chunk_size=2000):
        observation = env.step(action).observation
    state = observation.to_dict()
    state["after_step"] = step
    return state
