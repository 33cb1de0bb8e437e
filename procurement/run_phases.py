"""What a running episode of this process waits for between decisions: its model loading,
or the model's replies ("thinking").

Process-local, like the runner that sets it: on the embedded default the web process runs
the episodes, so its pages and API read it here; a Celery worker's phases reach the pages
through live events (``procurement.services.live.publish_episode_waiting``).
"""

from __future__ import annotations

import threading
from typing import Literal

Phase = Literal["loading_model", "thinking"]
LOADING_MODEL: Phase = "loading_model"
THINKING: Phase = "thinking"  # the episode's decisions wait on the model's replies

_phases: dict[int, Phase] = {}
_lock = threading.Lock()


def phase_of(episode_id: int) -> Phase | None:
    with _lock:
        return _phases.get(episode_id)


def phase_set(episode_id: int, phase: Phase | None) -> bool:
    """Record ``phase`` (None: the episode waits for nothing); True when it changed."""
    with _lock:
        before = _phases.get(episode_id)
        if phase is None:
            _phases.pop(episode_id, None)
        else:
            _phases[episode_id] = phase
        return before != phase
