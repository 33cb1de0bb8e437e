"""run_episode: drive one episode with a buyer policy and record every step."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .config import ScenarioConfig
from .env import ProcurementEnv
from .policies import Policy, get_policy
from .scenarios import load_scenario


@dataclass(slots=True)
class StepRecord:
    step: int
    week: int  # the week in which the action was taken
    action: Any
    valid: bool
    error: dict | None
    response: dict | None
    reward: float
    running_score: float
    events: list[dict]
    state: dict

    def to_dict(self) -> dict[str, Any]:
        return {
            "step": self.step,
            "week": self.week,
            "action": self.action,
            "valid": self.valid,
            "error": self.error,
            "response": self.response,
            "reward": self.reward,
            "running_score": self.running_score,
            "events": self.events,
            "state": self.state,
        }


@dataclass(slots=True)
class EpisodeResult:
    score: float
    metrics: dict[str, float | int]
    steps: list[StepRecord] = field(default_factory=list)
    seed: int = 0
    scenario_name: str = ""
    policy_name: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "score": self.score,
            "metrics": dict(self.metrics),
            "steps": [s.to_dict() for s in self.steps],
            "seed": self.seed,
            "scenario_name": self.scenario_name,
            "policy_name": self.policy_name,
        }


def _json_action(a: Any) -> Any:
    # Record the action as given when it is JSON-like; otherwise its repr (it was invalid).
    if isinstance(a, dict) and all(isinstance(k, str) for k in a):
        return dict(a)
    return repr(a)[:500]


def run_episode(
    scenario: str | dict | ScenarioConfig,
    policy: str | Policy,
    seed: int = 0,
    on_step: Callable[[StepRecord], None] | None = None,
    record_steps: bool = True,
    actions_prefix: list[Any] | None = None,
) -> EpisodeResult:
    """Run to done. `actions_prefix` replays stored actions first (resume after a crash),
    then the policy continues from the resulting observation."""
    cfg = load_scenario(scenario)
    pol = get_policy(policy, seed=seed) if isinstance(policy, str) else policy
    pol.reset(seed)
    env = ProcurementEnv(cfg)
    obs = env.reset(seed)
    steps: list[StepRecord] = []
    prefix = list(actions_prefix or [])
    i = 0
    while not env.done:
        action = prefix[i] if i < len(prefix) else pol.act(obs)
        i += 1
        week = env.week
        res = env.step(action)
        info = res.info
        if record_steps or on_step is not None:
            rec = StepRecord(
                info["step"],
                week,
                _json_action(action),
                info["valid"],
                info["error"],
                info["response"],
                res.reward,
                info["running_score"],
                info["events"],
                info["state"],
            )
            if record_steps:
                steps.append(rec)
            if on_step is not None:
                on_step(rec)
        obs = res.observation
    sc = env.score()
    metrics = dict(sc.metrics)
    for k in ("llm_parse_failures", "llm_fallbacks"):
        metrics[k] = int(pol.stats.get(k, 0)) if hasattr(pol, "stats") else 0
    return EpisodeResult(
        sc.score, metrics, steps, int(seed), cfg.name, getattr(pol, "name", str(policy))
    )
