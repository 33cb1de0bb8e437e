"""Limits on language-model runs."""

from __future__ import annotations

from config.settings.base import env

# Per user: LLM-backed single episodes queued or running at once, and LLM cells per sweep.
LLM_MAX_ACTIVE_EPISODES_PER_USER = env.int("LLM_MAX_ACTIVE_EPISODES_PER_USER", default=4)
LLM_MAX_SWEEP_CELLS_PER_USER = env.int("LLM_MAX_SWEEP_CELLS_PER_USER", default=500)

# Training runs (procurement.services.training): their folders live under
# DATA_DIR/training/NAME; a checkpoint every TRAINING_SAVE_EVERY steps lets a stopped run
# resume; the bounds keep one request from asking for days of work.
TRAINING_SAVE_EVERY = env.int("TRAINING_SAVE_EVERY", default=50)
TRAINING_MAX_STEPS = env.int("TRAINING_MAX_STEPS", default=20_000)
TRAINING_MAX_EPISODES = env.int("TRAINING_MAX_EPISODES", default=10_000)
