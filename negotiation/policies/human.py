"""The human seat: a person plays the buyer, one move at a time, from the episode page.

Nothing here picks actions. A human episode is not run by a worker: each move replays
the stored actions through a fresh engine (deterministic) and applies the new one, so no
process waits for the person. ``act`` refuses loudly for anything that tries to run the
policy unattended; after the idle timeout the ``fallback`` policy takes the seat.
"""

from __future__ import annotations

from typing import Any

from ..observation import Observation
from .base import Policy
from .params import HumanParams


class HumanSeatError(RuntimeError):
    pass


class HumanPolicy(Policy):
    name = "human"
    Params = HumanParams

    def act(self, obs: Observation) -> dict[str, Any]:
        raise HumanSeatError(
            "The human policy is played from its episode page (POST /api/episodes/ID/act/); "
            "it cannot run unattended."
        )
