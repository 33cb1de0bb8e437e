"""Shared set-up for worker tests: seeded scenarios/policies and the engine's own answers."""

from __future__ import annotations

from negotiation import run_episode
from procurement.models import Episode, PolicyConfig, Scenario
from procurement.services.scenarios import presets_seed


def seeded() -> tuple[dict[str, Scenario], dict[str, PolicyConfig]]:
    presets_seed()
    return (
        {s.name: s for s in Scenario.objects.all()},
        {p.name: p for p in PolicyConfig.objects.all()},
    )


def engine_score(episode: Episode) -> float:
    """The score the pure engine gives for the episode's scenario, policy and seed."""
    return run_episode(
        episode.scenario_snapshot, episode.policy_snapshot["policy"], episode.seed
    ).score


def assert_contiguous_decisions(episode: Episode) -> None:
    steps = list(episode.decisions.order_by("step").values_list("step", flat=True))
    assert steps == list(range(len(steps))), f"episode {episode.pk} has gaps or duplicates"
    assert len(steps) == episode.steps
