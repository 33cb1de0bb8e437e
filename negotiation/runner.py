"""run_episode: drive one episode with a buyer policy and record every step."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

from .config import ScenarioConfig
from .env import ProcurementEnv, StepResult
from .policies import Policy, get_policy
from .policies.base import POLICY_DECISION, DecisionMeta
from .scenarios import load_scenario
from .suppliers.cast import ModelBackend
from .suppliers.seat import AwaitingSupplier, SupplierSeat


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
    # Who decided and how (analyst record only; none of this reaches the buyer): the
    # actor and the LLM buyer's words, the step's LLM failure flags (buyer or supplier),
    # guard repairs (their count, and each one's reason: suppliers/guard.py), and who
    # answered for the supplier ("rule" | "llm" | "fallback:rule"; None when none did).
    # The reasons stay out of the step's info, which a buyer reads (OpenEnv): a price
    # repair next to the repaired price would tell it where the floor lies.
    decision: DecisionMeta = POLICY_DECISION
    guard_interventions: int = 0
    supplier_actor: str | None = None
    guard_repairs: tuple[str, ...] = ()

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
            **self.decision.to_dict(),
            "guard_interventions": self.guard_interventions,
            "supplier_actor": self.supplier_actor,
            "guard_repairs": list(self.guard_repairs),
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
    llm_backend: ModelBackend | None = None,
    world_key: bytes | None = None,
    supplier_seat: SupplierSeat | None = None,
) -> EpisodeResult:
    """Run to done. `actions_prefix` replays stored actions first (resume after a crash),
    then the policy continues from the resulting observation. `llm_backend` serves the
    scenario's LLM suppliers (see ProcurementEnv); rule-only scenarios ignore it.
    `world_key` seals the world (ProcurementEnv): a sealed episode replays only with it.
    `supplier_seat`: a person plays one supplier; an offer they have not answered yet
    raises AwaitingSupplier with the buyer's action and its decision record attached."""
    cfg = load_scenario(scenario)
    pol = get_policy(policy, seed=seed) if isinstance(policy, str) else policy
    pol.reset(seed)
    env = ProcurementEnv(
        cfg, llm_backend=llm_backend, world_key=world_key, supplier_seat=supplier_seat
    )
    obs = env.reset(seed=seed)
    steps: list[StepRecord] = []
    prefix = list(actions_prefix or [])
    recording = record_steps or on_step is not None
    i = 0
    while not env.done:
        replayed = i < len(prefix)
        action = prefix[i] if replayed else pol.act(obs)
        if replayed:
            pol.replayed(obs, action)
        i += 1
        decision = (None if replayed else pol.last_decision) or POLICY_DECISION
        try:
            if recording:
                res, rec = record_step(env, action, decision)
                if record_steps:
                    steps.append(rec)
                if on_step is not None:
                    on_step(rec)
            else:
                res = env.step(action)
        except AwaitingSupplier as waiting:
            waiting.action, waiting.decision = _json_action(action), decision
            raise
        obs = res.observation
    sc = env.score()
    return EpisodeResult(
        sc.score,
        episode_metrics(sc.metrics, pol),
        steps,
        int(seed),
        cfg.name,
        getattr(pol, "name", str(policy)),
    )


def record_step(
    env: ProcurementEnv, action: Any, decision: DecisionMeta = POLICY_DECISION
) -> tuple[StepResult, StepRecord]:
    """Take one step and describe it for the record: the engine's outcome, who decided,
    the step's guard repairs and LLM supplier failures, and who answered."""
    counters = env.world.counters
    guard0 = counters.guard_interventions
    parse0 = counters.supplier_llm_parse_failures
    fallback0 = counters.supplier_llm_fallbacks
    week = env.world.week
    res = env.step(action)
    info = res.info
    if counters.supplier_llm_fallbacks > fallback0:  # flag the step too
        parsed = counters.supplier_llm_parse_failures == parse0
        decision = replace(
            decision,
            llm_fallback=True,
            llm_parse_failure=decision.llm_parse_failure or not parsed,
        )
    sup_actor = env.world.step_supplier_actor
    if sup_actor is None and info["response"] is not None:
        sup_actor = "rule"
    record = StepRecord(
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
        decision,
        int(counters.guard_interventions - guard0),
        sup_actor,
        tuple(env.world.step_guard_repairs),
    )
    return res, record


def episode_metrics(metrics: dict[str, float | int], pol: Policy | None) -> dict[str, float | int]:
    """The engine's metrics plus the buyer's LLM counts: ``llm_parse_failures`` and
    ``llm_fallbacks`` cover buyer and suppliers, with the split kept alongside."""
    out = dict(metrics)
    stats = getattr(pol, "stats", {})
    for k in ("llm_parse_failures", "llm_fallbacks"):
        out[f"buyer_{k}"] = int(stats.get(k, 0))
        out[k] = out[f"buyer_{k}"] + int(out.get(f"supplier_{k}", 0))
    out["buyer_llm_calls"] = int(stats.get("llm_calls", 0))
    return out
