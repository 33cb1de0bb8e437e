"""Per-user shares of the machine (procurement.services.quotas): what one user may hold
open at once. The LLM limits are in llm.py, the OpenEnv sessions' in api.py."""

from __future__ import annotations

from config.settings.base import env

# Single episodes queued or running at once, of any policy (human seats apart).
MAX_ACTIVE_EPISODES_PER_USER = env.int("MAX_ACTIVE_EPISODES_PER_USER", default=10)
# Human seats open at once (a person plays one at a time; the rest wait for them).
MAX_OPEN_SEATS_PER_USER = env.int("MAX_OPEN_SEATS_PER_USER", default=3)
