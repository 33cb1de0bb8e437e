"""Reads: which results (sweeps, episodes) refer to a scenario or a policy."""

from __future__ import annotations

from dataclasses import dataclass

from procurement.models import PolicyConfig, Scenario


@dataclass(frozen=True)
class References:
    sweeps: int
    episodes: int

    def __bool__(self) -> bool:
        return bool(self.sweeps or self.episodes)


def result_references(*, obj: Scenario | PolicyConfig) -> References:
    # Counts, not the rows: a big sweep refers to a scenario through 20,000 cells.
    return References(sweeps=obj.sweeps.count(), episodes=obj.episodes.count())


def in_use_message(*, obj: Scenario | PolicyConfig) -> str:
    """Why ``obj`` cannot be deleted, or "" when nothing refers to it."""
    refs = result_references(obj=obj)
    if not refs:
        return ""
    kind = obj._meta.verbose_name
    return (
        f"{kind.capitalize()} '{obj}' is used by {refs.sweeps} sweep(s) and "
        f"{refs.episodes} episode(s); results refer to it, so it cannot be deleted."
    )
