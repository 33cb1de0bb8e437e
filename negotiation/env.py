"""ProcurementEnv: the episode loop (reset / step / score / observe) around a World."""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any

from .actions import ActionError, execute_action
from .config import ScenarioConfig
from .observation import Observation, next_episode_key, observe
from .scoring import EpisodeScore, running_score
from .suppliers.cast import ModelBackend, supplier_policies
from .suppliers.rule import SupplierPolicy
from .suppliers.seat import SupplierSeat
from .week import close_week
from .world.catalogue import catalogue_for
from .world.records import FrozenDict
from .world.seeding import check_world_key
from .world.state import World

# reset(seed=None) draws a seed below this bound, so every seed can be written down.
SEED_BOUND = 2**31
# env.last_action after a valid step: one immutable mapping that observations share.
VALID_ACTION: FrozenDict = FrozenDict({"valid": True, "error": None})


class EnvNotResetError(RuntimeError):
    """step() or observation() before the first reset()."""


@dataclass(slots=True)
class StepResult:
    observation: Observation
    reward: float
    done: bool
    info: dict[str, Any] = field(default_factory=dict)


class ProcurementEnv:
    """One episode at a time. Not thread-safe; create one env per concurrent episode.

    The state of the episode is ``env.world`` (a new World per reset); the env keeps only
    the loop's own state: seed, done, the last action's validity, the running score."""

    world: World  # set by reset()

    def __init__(
        self,
        config: ScenarioConfig | dict | str,
        *,
        llm_backend: ModelBackend | None = None,
        world_key: bytes | None = None,
        supplier_seat: SupplierSeat | None = None,
    ) -> None:
        """``llm_backend`` serves the scenario's LLM suppliers (``supplier_llm``) instead
        of the backend the scenario names: a shared batching handle, or a test double.

        ``world_key`` seals every world this env resets: its hidden draws come from the
        seed under the key (world/seeding.py), so a player who knows the seed, the scenario
        and this code still cannot rebuild it, and observations carry no seed. The key is
        the server's (a person's seat, a rated evaluation); None keeps public worlds,
        where the seed alone decides everything.

        ``supplier_seat`` plays one supplier for a person (suppliers/seat.py): it answers
        that supplier's offers in place of its persona, which answers when it cannot."""
        from .scenarios import load_scenario

        self._world_key = check_world_key(world_key)
        self.sealed = world_key is not None
        self.cfg: ScenarioConfig = load_scenario(config)
        self.catalogue = catalogue_for(self.cfg.items)
        self.seed: int | None = None
        self.episode_key = 0
        self.done = True
        self.started = False
        self.supplier_policies: dict[str, SupplierPolicy] = supplier_policies(self.cfg, llm_backend)
        self.supplier_seat = supplier_seat
        if supplier_seat is not None:
            supplier_seat.personas = dict(self.supplier_policies)
            self.supplier_policies[supplier_seat.supplier_id] = supplier_seat
        # {"valid": bool, "error": {code, message} | None}, read-only: observations hold it.
        self.last_action: FrozenDict = VALID_ACTION
        self._score = 0.0

    # ------------------------------------------------------------------ API
    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> Observation:
        """Start an episode. ``seed=None`` draws a fresh seed, reported as ``env.seed`` (and
        as ``obs.seed`` unless the env is sealed); the same seed (and key) always gives the
        same episode. No options exist yet: passing any is an error rather than silently
        ignored."""
        if options:
            raise ValueError(f"Unknown reset options: {', '.join(map(str, options))}.")
        if seed is None:
            seed = random.SystemRandom().randrange(SEED_BOUND)
        elif isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
            raise ValueError(f"seed must be a non-negative integer or None, not {seed!r}.")
        self.seed = seed
        self.episode_key = next_episode_key()
        self.started = True
        self.done = False
        self.last_action = VALID_ACTION
        self.world = World.generate(
            self.cfg,
            seed,
            world_key=self._world_key,
            catalogue=self.catalogue,
            supplier_policies=self.supplier_policies,
        )
        seat = self.supplier_seat
        if seat is not None and seat.supplier_id not in self.world.sup_by_id:
            known = ", ".join(sorted(self.world.sup_by_id))
            raise ValueError(f"No supplier '{seat.supplier_id}' to seat; this world has {known}.")
        self._score = 0.0
        self._score = self.running_score()
        return self._observe()

    def running_score(self) -> float:
        world = self.world
        if world.dirty:
            self._score = running_score(world)
            world.dirty = False
        return self._score

    def step(self, action: Any) -> StepResult:
        if not self.started:
            raise EnvNotResetError("Call reset() before step(): there is no episode yet.")
        if self.done:
            err = {"code": "episode_done", "message": "The episode is over; call reset()."}
            info = self._info(err, None, False)
            return StepResult(self._observe(), 0.0, True, info)
        world = self.world
        before = self.running_score()
        world.step_events = []
        world.step_supplier_actor = None
        world.step_guard_repairs = []
        step_index = world.steps_taken
        response = None
        error = None
        penalty = 0.0
        close = False
        try:
            response, close = execute_action(world, action)
        except ActionError as e:
            error = {"code": e.code, "message": e.message}
            penalty = self.cfg.malformed_penalty if e.malformed else self.cfg.invalid_penalty
            counters = world.counters
            counters.invalid_actions += 1
            if e.malformed:
                counters.malformed_actions += 1
            counters.total_invalid_penalty += penalty
        self.last_action = (
            VALID_ACTION
            if error is None
            else FrozenDict({"valid": False, "error": FrozenDict(error)})
        )
        world.steps_taken += 1
        world.slot += 1
        if close or world.slot >= self.cfg.actions_per_week:
            close_week(world)
        self._check_done()
        after = self.running_score()
        reward = after - before - penalty
        info = self._info(error, response, error is None)
        info["step"] = step_index
        return StepResult(self._observe(), reward, self.done, info)

    def _check_done(self) -> None:
        world = self.world
        if world.week >= self.cfg.weeks or world.all_decided():
            self.done = True
            return
        if world.steps_taken >= self.cfg.max_steps:
            # Out of action budget: the remaining weeks still play out (deliveries, deadlines).
            world.emit(
                "max_steps", "Step limit reached; remaining weeks run without buyer actions."
            )
            while world.week < self.cfg.weeks and not world.all_decided():
                close_week(world)
            self.done = True

    def _info(self, error: dict | None, response: dict | None, valid: bool) -> dict[str, Any]:
        world = self.world
        n_open = n_ful = n_fail = 0
        for r in world.requirements:
            s = r.status
            if s == "fulfilled":
                n_ful += 1
            elif s == "failed":
                n_fail += 1
            else:
                n_open += 1
        return {
            "error": error,
            "events": [e.to_dict() for e in world.step_events],
            "response": response,
            "valid": valid,
            "step": world.steps_taken,
            "week": world.week,
            "running_score": self.running_score(),
            "state": {
                "week": world.week,
                "budget_remaining": round(world.budget_total - world.budget_committed, 2),
                "budget_committed": round(world.budget_committed, 2),
                "requirements_open": n_open,
                "requirements_fulfilled": n_ful,
                "requirements_failed": n_fail,
                "contracts": len(world.contracts),
            },
        }

    def _observe(self) -> Observation:
        return observe(
            self.world, done=self.done, last_action=self.last_action, episode_key=self.episode_key
        )

    def score(self) -> EpisodeScore:
        from .metrics import compute_metrics

        s = self.running_score()
        return EpisodeScore(s, compute_metrics(self.world, s))

    def observation(self) -> Observation:
        """The current state as an Observation (e.g. after resuming by replay)."""
        if not self.started:
            raise EnvNotResetError("Call reset() first: there is no episode yet.")
        return self._observe()
