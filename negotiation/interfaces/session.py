"""TrainingSession: one trainer's stream of episodes, with the curriculum applied.

The OpenEnv server and the TRL environment both wrap one of these per client, so a
scenario, a tier or ``curriculum="auto"`` mean the same thing everywhere. With "auto" the
session keeps a Curriculum that records the agent's own finished-episode scores and
advances (or not) before the next reset; the tier in force is in ``metadata()``.
"""

from __future__ import annotations

from typing import Any

from ..config import TIERS, ScenarioConfig
from ..curriculum import Curriculum, apply_tier
from ..env import ProcurementEnv, StepResult
from ..limits import MAX_SEED
from ..observation import Observation
from ..scenarios import list_presets, load_scenario

DEFAULT_SCENARIO = "medium_adversarial"
CURRICULUM_MODES = ("auto",)


class SessionError(ValueError):
    """A reset or step request the session cannot honour; the message says why."""


def rule_presets() -> list[str]:
    """Preset names a trainer may ask for: those whose suppliers need no language model."""
    return list_presets(include_llm=False)


class TrainingSession:
    """Not thread-safe: one per client connection (or per pooled TRL instance)."""

    def __init__(self, *, scenario: str = DEFAULT_SCENARIO) -> None:
        self.default_scenario = scenario
        self.env: ProcurementEnv | None = None
        self.scenario: str | None = None
        self.tier: str | None = None
        self.curriculum: Curriculum | None = None
        self.episodes = 0
        self._recorded = False

    # ------------------------------------------------------------------ API
    def reset(
        self,
        *,
        scenario: str | None = None,
        seed: int | None = None,
        tier: str | None = None,
        curriculum: str | None = None,
    ) -> Observation:
        """Start a new episode. ``seed=None`` draws a fresh seed (see ``metadata()``)."""
        name = scenario or self.default_scenario
        base = self._base_config(name)
        if tier is not None and tier not in TIERS:
            raise SessionError(f"Unknown tier '{tier}'; use one of {', '.join(TIERS)}.")
        if curriculum is not None and curriculum not in CURRICULUM_MODES:
            raise SessionError(f"Unknown curriculum '{curriculum}'; use 'auto' or leave it out.")
        if seed is not None and (
            isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed <= MAX_SEED
        ):  # the web API's bound too (never echoed: a 5,000-digit int has no repr)
            raise SessionError(f"seed must be a whole number from 0 to {MAX_SEED}.")
        self._record_finished_episode()
        if curriculum == "auto":
            if self.curriculum is None or self.curriculum.base.name != base.name:
                self.curriculum = Curriculum(base, tier or TIERS[0])
            cfg = self.curriculum.config()
            self.tier = self.curriculum.tier
        else:
            self.curriculum = None
            cfg = apply_tier(base, tier) if tier else base
            self.tier = tier
        self.scenario = name
        self.env = ProcurementEnv(cfg)
        self.episodes += 1
        self._recorded = False
        return self.env.reset(seed=seed)

    def step(self, action: Any) -> StepResult:
        if self.env is None:
            raise SessionError("Call reset() before step().")
        result = self.env.step(action)
        if result.done:
            self._record_finished_episode()
        return result

    def score(self) -> float:
        if self.env is None:
            raise SessionError("Call reset() first.")
        return self.env.score().score

    def metadata(self) -> dict[str, Any]:
        """What a trainer needs to reproduce or follow the run: scenario, seed, tier,
        and the curriculum's progress when it is automatic."""
        env = self.env
        meta: dict[str, Any] = {
            "scenario": self.scenario,
            "seed": None if env is None else env.seed,
            "tier": self.tier,
            "episode": self.episodes,
            "step": 0 if env is None else env.world.steps_taken,
            "running_score": None if env is None else round(env.running_score(), 6),
        }
        if self.curriculum is not None:
            c = self.curriculum
            meta["curriculum"] = {
                "mode": "auto",
                "tier": c.tier,
                "rolling_mean": round(c.rolling_mean, 6),
                "window": c.window,
                "episodes_in_window": len(c.scores),
                "promote_at": c.promote_at,
            }
        return meta

    # ------------------------------------------------------------------ helpers
    def _base_config(self, name: str) -> ScenarioConfig:
        if name not in rule_presets():
            raise SessionError(
                f"Unknown scenario '{name}'; use one of {', '.join(rule_presets())}."
            )
        return load_scenario(name)

    def _record_finished_episode(self) -> None:
        """Feed a finished episode's score to the curriculum exactly once."""
        env = self.env
        if self.curriculum is None or env is None or not env.done or self._recorded:
            return
        self._recorded = True
        self.curriculum.record(env.score().score)
