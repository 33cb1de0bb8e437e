"""Procurement Arena negotiation engine (pure Python, no Django)."""

from .config import ScenarioConfig, ScenarioValidationError
from .curriculum import Curriculum, apply_tier
from .env import EnvNotResetError, ProcurementEnv, StepResult
from .observation import Observation
from .policies import get_policy, list_policies, register_policy
from .runner import EpisodeResult, StepRecord, run_episode
from .scenarios import list_presets, load_scenario
from .scoring import EpisodeScore
from .transcript import format_transcript

__all__ = [
    "Curriculum",
    "EnvNotResetError",
    "EpisodeResult",
    "EpisodeScore",
    "Observation",
    "ProcurementEnv",
    "ScenarioConfig",
    "ScenarioValidationError",
    "StepRecord",
    "StepResult",
    "apply_tier",
    "format_transcript",
    "get_policy",
    "list_policies",
    "list_presets",
    "load_scenario",
    "register_policy",
    "run_episode",
]
