"""Reads of scenario configs as a person may see them: hidden supplier settings scrubbed.

A named supplier's persona (negotiation.config.HIDDEN_SUPPLIER_SETTINGS) is what its
buyer must find out by negotiating: only admins read it, and not while they hold a seat
that plays against it. Every reader of a config (the scenario and preset API, the
scenario page, an episode's scenario snapshot) goes through ``scenario_config_view``.
"""

from __future__ import annotations

from typing import Any

from negotiation.config import scrub_hidden_settings
from procurement.models import Episode, EpisodeStatus
from procurement.roles import has_role
from procurement.run_plan import HUMAN_QUEUE


def holds_running_seat(user) -> bool:
    """Whether ``user`` plays a human seat right now (cached on the user: one query per
    request, however many configs it reads)."""
    if not getattr(user, "is_authenticated", False):
        return False
    if not hasattr(user, "_arena_holds_seat"):
        user._arena_holds_seat = Episode.objects.filter(
            created_by=user, queue=HUMAN_QUEUE, status=EpisodeStatus.RUNNING
        ).exists()
    return user._arena_holds_seat


def hidden_settings_readable(user) -> bool:
    """Admins read hidden supplier settings, except while they hold a running seat."""
    return has_role(user, "admin") and not holds_running_seat(user)


def scenario_config_view(config: Any, *, user) -> Any:
    """``config`` as ``user`` may read it (anyone unknown reads it scrubbed)."""
    return config if hidden_settings_readable(user) else scrub_hidden_settings(config)
