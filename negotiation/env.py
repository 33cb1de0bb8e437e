"""ProcurementEnv: the world state, the step loop and the weekly cycle."""

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
from .week import close_week
from .world.catalogue import catalogue_for
from .world.draws import Span
from .world.entities import (
    Contract,
    Event,
    PurchaseRequisition,
    Requirement,
    Supplier,
    SupplierHidden,
    Thread,
    ThreadHidden,
)
from .world.market import Market
from .world.records import FrozenDict

# reset(seed=None) draws a seed below this bound, so every seed can be written down.
SEED_BOUND = 2**31
# A supplier's list price per requirement around its list factor (rng.uniform's floats).
_LIST_JITTER = Span(0.97, 1.03)
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
    """One episode at a time. Not thread-safe; create one env per concurrent episode."""

    def __init__(
        self, config: ScenarioConfig | dict | str, *, llm_backend: ModelBackend | None = None
    ) -> None:
        """``llm_backend`` serves the scenario's LLM suppliers (``supplier_llm``) instead
        of the backend the scenario names: a shared batching handle, or a test double."""
        from .scenarios import load_scenario

        self.cfg: ScenarioConfig = load_scenario(config)
        self.catalogue = catalogue_for(self.cfg.items)
        self.seed: int | None = None
        self.episode_key = 0
        self.done = True
        self.started = False
        self.steps_taken = 0
        self.step_supplier_actor: str | None = None
        self.supplier_policies: dict[str, SupplierPolicy] = supplier_policies(self.cfg, llm_backend)

    # ------------------------------------------------------------------ setup helpers
    def add_requirement(self, r: Requirement) -> None:
        self.requirements.append(r)
        self.req_by_id[r.id] = r
        self.contracts_by_req[r.id] = []
        self.market.add_category(r.category)
        for sup in self.suppliers:
            if r.category in sup.categories:
                self._add_list_price(sup, r)
        self.zopa[r.id] = self._zopa_exists(r)

    def add_supplier(self, sup: Supplier, hidden: SupplierHidden, style: tuple[float, ...]) -> None:
        self.suppliers.append(sup)
        self.sup_by_id[sup.id] = sup
        self.hidden[sup.id] = hidden
        self.style[sup.id] = style
        self.true_cap_initial[sup.id] = dict(hidden.true_capacity)
        for r in self.requirements:
            if r.category in sup.categories:
                self._add_list_price(sup, r)

    def refresh_zopa(self) -> None:
        for r in self.requirements:
            self.zopa[r.id] = self._zopa_exists(r)

    def _add_list_price(self, sup: Supplier, r: Requirement) -> None:
        h = self.hidden[sup.id]
        jitter = 1.0 if self.cfg.mode == "bilateral" else _LIST_JITTER.draw(self.rng)
        item_price = self.item_price(r)
        self.list_base[(sup.id, r.id)] = item_price * h.list_factor * jitter
        sup.list_prices[r.id] = self.list_price(sup.id, r)
        sup.touch()

    def item_price(self, r: Requirement) -> float:
        p = self._item_price.get(r.item_key)
        if p is None:
            p = self._item_price[r.item_key] = self.catalogue.by_key[r.item_key].typical_unit_price
        return p

    def list_price(self, sid: str, r: Requirement) -> float:
        h = self.hidden[sid]
        return self.list_base[(sid, r.id)] * self.market.index[r.category] * h.rival_push

    def refresh_list_prices(self) -> None:
        """Every supplier's list prices at this week's market (the weekly close)."""
        req_by_id = self.req_by_id
        for sup in self.suppliers:
            prices = sup.list_prices
            for rid in prices:
                prices[rid] = self.list_price(sup.id, req_by_id[rid])
            sup.touch()

    def reservation_now(self, sid: str, r: Requirement) -> tuple[float, float]:
        """(cost, reservation) the supplier would use for a thread opened now."""
        h = self.hidden[sid]
        cost = self.item_price(r) * h.cost_ratio[r.category] * self.market.index[r.category]
        return cost, cost * (1.0 + h.margin) * h.rival_push

    def _zopa_exists(self, r: Requirement) -> bool:
        for sup in self.suppliers:
            if (
                r.category in sup.categories
                and self.reservation_now(sup.id, r)[1] <= r.ceiling_unit_price
            ):
                return True
        return False

    def hidden_thread_now(self, sid: str, r: Requirement) -> ThreadHidden:
        """The hidden pricing a thread opened now would get (nothing is opened)."""
        h = self.hidden[sid]
        cost, res = self.reservation_now(sid, r)
        floor = res * (1.0 + h.floor_margin)
        anchor = max(self.list_price(sid, r), floor * 1.05)
        return ThreadHidden(res, cost, floor, anchor, h.beta, h.patience)

    def open_thread(self, sid: str, r: Requirement) -> Thread:
        th = Thread(sid, r.id)
        self.threads[(sid, r.id)] = th
        self.th_hidden[(sid, r.id)] = self.hidden_thread_now(sid, r)
        return th

    def emit(self, kind: str, text: str, week: int | None = None) -> None:
        ev = Event(self.week if week is None else week, kind, text)
        self.events.append(ev)
        self.step_events.append(ev)

    def mark_dirty(self) -> None:
        self._dirty = True

    # ------------------------------------------------------------------ API
    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> Observation:
        """Start an episode. ``seed=None`` draws a fresh seed, reported as ``obs.seed`` and
        ``env.seed``; the same seed always gives the same episode. No options exist yet:
        passing any is an error rather than silently ignored."""
        from .world.worldgen import generate_arena, generate_bilateral

        if options:
            raise ValueError(f"Unknown reset options: {', '.join(map(str, options))}.")
        if seed is None:
            seed = random.SystemRandom().randrange(SEED_BOUND)
        elif isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
            raise ValueError(f"seed must be a non-negative integer or None, not {seed!r}.")
        cfg = self.cfg
        self.seed = seed
        self.episode_key = next_episode_key()
        self.started = True
        self.rng = random.Random(self.seed)
        self.week = 0
        self.slot = 0
        self.steps_taken = 0
        self.done = False
        self.budget_total = 0.0
        self.budget_committed = 0.0
        self.requirements: list[Requirement] = []
        self.req_by_id: dict[str, Requirement] = {}
        self.suppliers: list[Supplier] = []
        self.sup_by_id: dict[str, Supplier] = {}
        self.hidden: dict[str, SupplierHidden] = {}
        self.style: dict[str, tuple[float, ...]] = {}
        self.true_cap_initial: dict[str, dict[str, int]] = {}
        self.list_base: dict[tuple[str, str], float] = {}
        self.threads: dict[tuple[str, str], Thread] = {}
        self.th_hidden: dict[tuple[str, str], ThreadHidden] = {}
        self.contracts: list[Contract] = []
        self.contracts_by_req: dict[str, list[Contract]] = {}
        self.contract_cap: dict[str, int] = {}
        self.prs: list[PurchaseRequisition] = []
        self.events: list[Event] = []
        self.step_events: list[Event] = []
        self.zopa: dict[str, bool] = {}
        self._item_price: dict[str, float] = {}
        self.market = Market([], cfg.market_volatility, cfg.market_seasonality, cfg.weeks)
        self.escalations_left = cfg.escalations
        self.counters: dict[str, int | float] = {
            "deferrals": 0,
            "escalations": 0,
            "hedges": 0,
            "invalid_actions": 0,
            "malformed_actions": 0,
            "total_invalid_penalty": 0.0,
            "guard_interventions": 0,
            "walk_aways": 0,
            "late_deliveries": 0,
            "partial_deliveries": 0,
            "defaults": 0,
            "rival_bookings": 0,
            "disruptions": 0,
            "negotiation_rounds": 0,
            "prs_raised": 0,
            "rejections": 0,
            "holding_costs": 0.0,
            "supplier_llm_decisions": 0,
            "supplier_llm_parse_failures": 0,
            "supplier_llm_fallbacks": 0,
        }
        # {"valid": bool, "error": {code, message} | None}, read-only: observations hold it.
        self.last_action: FrozenDict = VALID_ACTION
        self.max_rounds: int | None = cfg.bilateral_max_rounds if cfg.mode == "bilateral" else None
        self.seller_cost: float | None = None  # bilateral: set by generate_bilateral
        if cfg.mode == "bilateral":
            generate_bilateral(self)
        else:
            generate_arena(self)
        self.refresh_zopa()
        self.budget_initial = self.budget_total
        self.emit(
            "start",
            f"Episode start: {len(self.requirements)} requirements, "
            f"{len(self.suppliers)} suppliers, {cfg.weeks} weeks.",
        )
        self._dirty = True
        self._score = 0.0
        self._score = self.running_score()
        return observe(self)

    def running_score(self) -> float:
        if self._dirty:
            self._score = running_score(self)
            self._dirty = False
        return self._score

    def step(self, action: Any) -> StepResult:
        if not self.started:
            raise EnvNotResetError("Call reset() before step(): there is no episode yet.")
        if self.done:
            err = {"code": "episode_done", "message": "The episode is over; call reset()."}
            info = self._info(err, None, False)
            return StepResult(observe(self), 0.0, True, info)
        before = self.running_score()
        self.step_events = []
        self.step_supplier_actor = None
        step_index = self.steps_taken
        response = None
        error = None
        penalty = 0.0
        close = False
        try:
            response, close = execute_action(self, action)
        except ActionError as e:
            error = {"code": e.code, "message": e.message}
            penalty = self.cfg.malformed_penalty if e.malformed else self.cfg.invalid_penalty
            self.counters["invalid_actions"] += 1
            if e.malformed:
                self.counters["malformed_actions"] += 1
            self.counters["total_invalid_penalty"] += penalty
        self.last_action = (
            VALID_ACTION
            if error is None
            else FrozenDict({"valid": False, "error": FrozenDict(error)})
        )
        self.steps_taken += 1
        self.slot += 1
        if close or self.slot >= self.cfg.actions_per_week:
            close_week(self)
        self._check_done()
        after = self.running_score()
        reward = after - before - penalty
        info = self._info(error, response, error is None)
        info["step"] = step_index
        return StepResult(observe(self), reward, self.done, info)

    def _all_decided(self) -> bool:
        # A plain loop: all() over a generator takes twice as long, on every step.
        for r in self.requirements:  # noqa: SIM110
            if not r.decided:
                return False
        return True

    def _check_done(self) -> None:
        if self.week >= self.cfg.weeks or self._all_decided():
            self.done = True
            return
        if self.steps_taken >= self.cfg.max_steps:
            # Out of action budget: the remaining weeks still play out (deliveries, deadlines).
            self.emit("max_steps", "Step limit reached; remaining weeks run without buyer actions.")
            while self.week < self.cfg.weeks and not self._all_decided():
                close_week(self)
            self.done = True

    def _info(self, error: dict | None, response: dict | None, valid: bool) -> dict[str, Any]:
        n_open = n_ful = n_fail = 0
        for r in self.requirements:
            s = r.status
            if s == "fulfilled":
                n_ful += 1
            elif s == "failed":
                n_fail += 1
            else:
                n_open += 1
        return {
            "error": error,
            "events": [e.to_dict() for e in self.step_events],
            "response": response,
            "valid": valid,
            "step": self.steps_taken,
            "week": self.week,
            "running_score": self.running_score(),
            "state": {
                "week": self.week,
                "budget_remaining": round(self.budget_total - self.budget_committed, 2),
                "budget_committed": round(self.budget_committed, 2),
                "requirements_open": n_open,
                "requirements_fulfilled": n_ful,
                "requirements_failed": n_fail,
                "contracts": len(self.contracts),
            },
        }

    @property
    def budget_remaining(self) -> float:
        return self.budget_total - self.budget_committed

    def score(self) -> EpisodeScore:
        from .metrics import compute_metrics

        s = self.running_score()
        return EpisodeScore(s, compute_metrics(self, s))

    def observation(self) -> Observation:
        """The current state as an Observation (e.g. after resuming by replay)."""
        if not self.started:
            raise EnvNotResetError("Call reset() first: there is no episode yet.")
        return observe(self)
