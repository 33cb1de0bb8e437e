"""Limits on language-model runs."""

from __future__ import annotations

from config.settings.base import env

# Per user: LLM-backed single episodes queued or running at once, and LLM cells per sweep.
LLM_MAX_ACTIVE_EPISODES_PER_USER = env.int("LLM_MAX_ACTIVE_EPISODES_PER_USER", default=4)
LLM_MAX_SWEEP_CELLS_PER_USER = env.int("LLM_MAX_SWEEP_CELLS_PER_USER", default=500)
