"""The oracle: a buyer that reads the hidden world, for measurement only.

It knows every supplier's reservation, floor, tactic mix, reciprocity, stall patience and
deadline pressure, so it can simulate the rule supplier's answer to any offer
(concession.py) and play the cheapest path a thread allows: a rising schedule of offers
that never stalls nor insults, closed by the lowest offer the supplier accepts or by
awarding its standing counter. Benchmarks (bench/quality.py) use it to show how close a
policy gets to what is possible; it is not in the policy registry, so the API, the
dashboard and the leaderboards cannot run it (``get_policy("oracle")`` is refused).

``SafeOpenOraclePolicy`` is the same oracle held to the expert's safe opening in bilateral
games (never under the highest insult line any persona can have at the public cost): what
a buyer that knew everything could reach without ever risking an insult, which a buyer
that cannot tell the persona before its first offer must not risk. It bounds what any
public-information buyer that keeps every deal can reach.

Contract: ``OraclePolicy(seed)``, then ``watch(env)`` after every ``env.reset``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..observation import Observation
from .expert import ExpertPolicy, acting
from .expert.beliefs import SAFE_OPEN_COST, SupplierView
from .expert.planning import Plan
from .lookahead import Path, best_path

if TYPE_CHECKING:
    from ..env import ProcurementEnv

NAME = "oracle"
SAFE_OPEN_NAME = "oracle_safe_open"
LONG = 6  # offers a thread may take when the slots allow


class TrueJudge:
    """The planner's beliefs replaced by the truth: reliability, capacity, reachable prices."""

    def __init__(self, oracle: OraclePolicy) -> None:
        self.oracle = oracle

    def view(self, s) -> SupplierView:
        return SupplierView(self.oracle.env.world.hidden[s.id].true_reliability, False)

    def usable_capacity(self, s, category: str, view: SupplierView) -> int:
        true = self.oracle.env.world.hidden[s.id].true_capacity.get(category, 0)
        return min(s.capacity.get(category, 0), true)

    def price(self, obs: Observation, r, s, th, rounds: int) -> float:
        path = self.oracle.path(s.id, r, 0 if th is None else th.offers, rounds)
        return path.price if path is not None else 2.0 * r.ceiling_unit_price

    def rounds_wanted(self, obs: Observation, r, s, th) -> int:
        path = self.oracle.path(s.id, r, 0 if th is None else th.offers, LONG)
        return 0 if path is None else len(path.offers)


class OraclePolicy(ExpertPolicy):
    """The expert's planner with the truth for beliefs, and every thread on its best path."""

    name = NAME

    def __init__(self, seed: int = 0, **params: Any) -> None:
        super().__init__(seed, **params)
        self._env: ProcurementEnv | None = None
        self._paths: dict[tuple, Path | None] = {}

    def _judge(self) -> TrueJudge:
        return TrueJudge(self)

    @property
    def env(self) -> ProcurementEnv:
        if self._env is None:
            raise RuntimeError("OraclePolicy.watch(env) must be called after env.reset().")
        return self._env

    def watch(self, env: ProcurementEnv) -> None:
        self._env = env
        self._paths = {}
        self.planner.reset()

    def path(self, sid: str, r, k: int, rounds: int) -> Path | None:
        """The cheapest path on (sid, r) from k offers within ``rounds`` more (memoised)."""
        env = self.env
        key = (sid, r.id, k, rounds, env.world.week)
        if key not in self._paths:
            th = env.world.th_hidden.get((sid, r.id)) or env.world.hidden_thread_now(sid, r)
            self._paths[key] = best_path(
                th,
                env.world.hidden[sid],
                k,
                env.world.week,
                r.ceiling_unit_price,
                rounds,
                self.lowest_first(),
            )
        return self._paths[key]

    def lowest_first(self) -> float:
        """The lowest first offer a path may make (none: the seller's insult line)."""
        return 0.0

    def act(self, obs: Observation) -> dict[str, Any]:
        self.env  # noqa: B018 - refuses to play unwatched
        return super().act(obs)

    def bilateral_move(self, obs: Observation, s, r, th, qty: int) -> acting.Move:
        k = 0 if th is None else th.offers
        path = self.path(s.id, r, k, (obs.max_rounds or 1) + 1 - k)
        if path is None or not path.offers:
            if th is not None and th.counter_price is not None:
                why = "no cheaper path: " if path is None else "the best path awards it: "
                return acting.award(s.id, r.id, qty), why + f"award counter {th.counter_price:.2f}"
            return acting.DEFER, "no path to a deal within the ceiling"
        return acting.negotiate(s.id, r.id, path.offers[0]), _path_reason(path)

    def offer(self, obs: Observation, p: Plan) -> acting.Move:
        path = self.path(p.s.id, p.r, p.k, max(1, p.budget))
        if path is None or not path.offers:
            return super().offer(obs, p)
        action = acting.negotiate(p.s.id, p.r.id, path.offers[0])
        return action, f"{p.s.id} on {p.r.id}: {_path_reason(path)}"


def _path_reason(path: Path) -> str:
    """The oracle's offer, from the cheapest path it found."""
    end = "then award the counter" if path.award else "the last one accepted"
    return (
        f"offer {path.offers[0]:.2f}, step 1 of {len(path.offers)} on the cheapest path "
        f"(deal at {path.price:.2f}, {end}), from the hidden prices"
    )


class SafeOpenOraclePolicy(OraclePolicy):
    """The oracle, never opening under the expert's safe line at the seller's public cost."""

    name = SAFE_OPEN_NAME

    def lowest_first(self) -> float:
        cost = self.env.world.seller_cost
        return 0.0 if cost is None else SAFE_OPEN_COST * cost
