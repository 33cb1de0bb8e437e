"""Curriculum tiers novice -> master. Each tier sets concrete world parameters
(apply_tier); Curriculum advances on a rolling average of episode scores."""

from __future__ import annotations

from collections import deque
from typing import Any

from .config import TIERS, ScenarioConfig, validate_config

TIER_PARAMS: dict[str, dict[str, Any]] = {
    "novice": {
        "persona_mix": {"cooperative": 0.6, "hardball": 0.2, "deceptive": 0.0, "distressed": 0.2},
        "deception_level": 0.2,
        "rival_aggression": 0.0,
        "market_volatility": 0.01,
        "disruption_rate": 0.0,
        "budget_tightness": 0.1,
        "deadline_tightness": 0.1,
        "tell_noise": 0.08,
        "bilateral_persona": "cooperative",
        "bilateral_max_rounds": 10,
    },
    "apprentice": {
        "persona_mix": {"cooperative": 0.45, "hardball": 0.3, "deceptive": 0.1, "distressed": 0.15},
        "deception_level": 0.4,
        "rival_aggression": 0.2,
        "market_volatility": 0.02,
        "disruption_rate": 0.03,
        "budget_tightness": 0.3,
        "deadline_tightness": 0.25,
        "tell_noise": 0.1,
        "bilateral_persona": "distressed",
        "bilateral_max_rounds": 9,
    },
    "practitioner": {
        "persona_mix": {"cooperative": 0.3, "hardball": 0.3, "deceptive": 0.25, "distressed": 0.15},
        "deception_level": 0.6,
        "rival_aggression": 0.4,
        "market_volatility": 0.03,
        "disruption_rate": 0.05,
        "budget_tightness": 0.45,
        "deadline_tightness": 0.4,
        "tell_noise": 0.12,
        "bilateral_persona": "deceptive",
        "bilateral_max_rounds": 8,
    },
    "expert": {
        "persona_mix": {"cooperative": 0.2, "hardball": 0.35, "deceptive": 0.3, "distressed": 0.15},
        "deception_level": 0.8,
        "rival_aggression": 0.6,
        "market_volatility": 0.04,
        "disruption_rate": 0.08,
        "budget_tightness": 0.65,
        "deadline_tightness": 0.55,
        "tell_noise": 0.15,
        "bilateral_persona": "hardball",
        "bilateral_max_rounds": 7,
    },
    "master": {
        "persona_mix": {"cooperative": 0.1, "hardball": 0.4, "deceptive": 0.35, "distressed": 0.15},
        "deception_level": 1.0,
        "rival_aggression": 0.85,
        "market_volatility": 0.06,
        "disruption_rate": 0.12,
        "budget_tightness": 0.85,
        "deadline_tightness": 0.7,
        "tell_noise": 0.2,
        "bilateral_persona": "hardball",
        "bilateral_max_rounds": 6,
    },
}


def apply_tier(cfg: ScenarioConfig, tier: str) -> ScenarioConfig:
    """A new config with the tier's parameters applied (the base's size is kept)."""
    if tier not in TIER_PARAMS:
        raise ValueError(f"Unknown tier '{tier}'; use one of {', '.join(TIERS)}.")
    data = cfg.model_dump()
    params = dict(TIER_PARAMS[tier])
    if cfg.mode == "bilateral":
        for k in ("rival_aggression", "disruption_rate", "budget_tightness", "deadline_tightness"):
            params.pop(k)
        params["persona_mix"] = {params["bilateral_persona"]: 1.0}
        params["actions_per_week"] = max(cfg.actions_per_week, params["bilateral_max_rounds"] + 3)
    else:
        params.pop("bilateral_persona")
        params.pop("bilateral_max_rounds")
    data.update(params)
    data["curriculum_tier"] = tier
    if not data["name"].endswith(f"@{tier}"):
        data["name"] = f"{cfg.name.split('@')[0]}@{tier}"[:100]
    return validate_config(data)


class Curriculum:
    """Promote after `window` episodes whose rolling mean score >= promote_at; demote when
    it falls below demote_at (optional)."""

    def __init__(
        self,
        base: ScenarioConfig,
        tier: str = "novice",
        window: int = 20,
        promote_at: float = 0.6,
        demote_at: float | None = None,
    ) -> None:
        if tier not in TIERS:
            raise ValueError(f"Unknown tier '{tier}'.")
        self.base = base
        self.tier = tier
        self.window = window
        self.promote_at = promote_at
        self.demote_at = demote_at
        self.scores: deque[float] = deque(maxlen=window)
        self.history: list[tuple[str, float]] = []

    def config(self) -> ScenarioConfig:
        return apply_tier(self.base, self.tier)

    @property
    def rolling_mean(self) -> float:
        return sum(self.scores) / len(self.scores) if self.scores else 0.0

    def record(self, score: float) -> str | None:
        """Record an episode score; returns the new tier if it changed."""
        self.scores.append(float(score))
        self.history.append((self.tier, float(score)))
        if len(self.scores) < self.window:
            return None
        i = TIERS.index(self.tier)
        if self.rolling_mean >= self.promote_at and i + 1 < len(TIERS):
            self.tier = TIERS[i + 1]
        elif self.demote_at is not None and self.rolling_mean < self.demote_at and i > 0:
            self.tier = TIERS[i - 1]
        else:
            return None
        self.scores.clear()
        return self.tier
