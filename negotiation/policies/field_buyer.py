"""Field buyers: third-party negotiation agents (negmas, negmas-genius-agents) as buyers.

The reference buyers the field family's sellers (suppliers/field.py) come from, playing
our side: `FieldBuyerPolicy` lets one negmas negotiator make a buyer's offers and
decide when a counter is good enough, through the scripted buyers' loop (scripts.py:
per requirement the cheapest supplier first, one offer per action, awards with the
baselines' helpers). They are measurement references for bench/quality.py, not in the
public policy registry. Both packages are optional (requirements/field.txt, AGPL-3.0-or-
later) and imported inside functions only.

How one thread is decided. Each decision replays the thread's public rounds through a
fresh negmas `SAOMechanism` (one offer per step) with two negotiators: the field buyer
first, then a proxy seller whose proposals are the supplier's counters and who never
accepts. After the replay the buyer answers the standing counter: it accepts (the
counter is awarded) or proposes the next offer. Replaying keeps the policy stateless
like the scripts (a run resumes from any step) and deterministic: the global `random`
and `numpy.random` generators the Genius agents draw from are seeded per step from the
policy seed and the thread (suppliers/field.py's ``_seeded``), and the clock reads 0.

- Outcome space: one discrete price issue, 2 * GRID_STEPS + 1 prices descending from
  ``2 * ceiling - opening`` to ``opening`` (the scripts' opening, OPENING x reference
  price). Utility 0 at the top, 0.5 (the reserved value) at the ceiling, 1 at the
  opening, linear in price, because Genius agents assume utilities in [0, 1]. Counters
  off the grid are clipped to it; offers above the ceiling are cut to it.
- Time: the buyer's horizon is H offers: bilateral ``max_rounds + 1`` (the seller answers
  one offer past its public round limit), arena SAFE_ROUNDS + 1. The mechanism has
  ``2 H - 1`` steps, so the buyer's last proposal is its last step; negmas's relative
  time at the buyer's k-th offer is (2k - 1) / (2H).
- The negotiator's end: once it has made its H offers, ends the negotiation, or proposes
  nothing, the thread is out of time and the buyer awards the standing counter if
  affordable (as the scripts do when time runs out); in the arena also at the scripts'
  deadline rule (ScriptPolicy.time_out).
"""

from __future__ import annotations

import math
import zlib
from dataclasses import dataclass
from typing import Any

from ..observation import Observation
from ..suppliers.field import GRID_STEPS, _mechanism_class, _seeded, grid_space_and_utility
from .base import Policy
from .expert.beliefs import SAFE_ROUNDS
from .scripts import ScriptPolicy

OPENING = 0.6  # x reference price: the scripts' opening (params.ScriptParams.opening)
PREFIX = "negmas_"  # a field buyer's name in the benchmark: negmas_<agent>


@dataclass(frozen=True, slots=True)
class FieldBuyer:
    """One field buyer: which negotiator class plays it."""

    name: str
    module: str
    cls: str

    def make_negotiator(self) -> Any:
        import importlib

        return getattr(importlib.import_module(self.module), self.cls)(name="buyer")


_SAO = "negmas.sao"
_GENIUS = "negmas_genius_agents"

BUYERS: dict[str, FieldBuyer] = {
    b.name: b
    for b in (
        # negmas's own time-based aspiration negotiators and naive tit-for-tat: the field
        # sellers' strategies, on the buyer's side.
        FieldBuyer(PREFIX + "boulware", _SAO, "BoulwareTBNegotiator"),
        FieldBuyer(PREFIX + "linear", _SAO, "LinearTBNegotiator"),
        FieldBuyer(PREFIX + "conceder", _SAO, "ConcederTBNegotiator"),
        FieldBuyer(PREFIX + "tit_for_tat", _SAO, "NaiveTitForTatNegotiator"),
        # ANAC agents re-implemented by negmas-genius-agents.
        FieldBuyer(PREFIX + "agent_k", _GENIUS, "AgentK"),  # ANAC 2010 winner
        FieldBuyer(PREFIX + "hardheaded", _GENIUS, "HardHeaded"),  # ANAC 2011 winner
        FieldBuyer(PREFIX + "nice_tit_for_tat", _GENIUS, "NiceTitForTat"),  # ANAC 2011
        FieldBuyer(PREFIX + "cuhk_agent", _GENIUS, "CUHKAgent"),  # ANAC 2012 winner
    )
}


def available_field_buyers() -> list[str]:
    """The field buyers whose packages import here."""
    import importlib.util

    return [
        name
        for name, b in BUYERS.items()
        if importlib.util.find_spec(b.module.split(".")[0]) is not None
    ]


def _cents(x: float) -> float:
    return round(x + 1e-9, 2)


class _Grid:
    """The buyer's price grid for one requirement: index 0 the top price, GRID_STEPS the
    ceiling, 2 * GRID_STEPS the opening."""

    def __init__(self, opening: float, ceiling: float) -> None:
        self.ceiling = ceiling
        self.step = max(ceiling - opening, 0.01 * abs(ceiling), 1e-6) / GRID_STEPS
        self.top = ceiling + GRID_STEPS * self.step

    def price(self, index: int) -> float:
        return _cents(self.top - index * self.step)

    def index(self, price: float) -> int:
        """The grid point at or above ``price``: the buyer never underrates a counter."""
        if not math.isfinite(price):
            return 0
        i = math.floor((self.top - price) / self.step + 1e-9)
        return max(0, min(2 * GRID_STEPS, i))


class FieldBuyerPolicy(ScriptPolicy):
    """A negmas negotiator as the buyer (see the module docstring)."""

    name = "field_buyer"

    def __init__(self, buyer: str, seed: int = 0) -> None:
        if buyer not in BUYERS:
            raise KeyError(f"unknown field buyer {buyer!r}; known: {sorted(BUYERS)}")
        super().__init__(seed, opening=OPENING)
        self.buyer = BUYERS[buyer]
        self.name = buyer

    # --- ScriptPolicy's hooks ----------------------------------------------------------
    def opening_offer(self, obs: Observation, r) -> float:
        kind, price = self._decide(obs, r, None, None)
        if kind != "offer":
            return super().opening_offer(obs, r)
        return min(price, _cents(r.ceiling_unit_price))

    def next_offer(self, obs: Observation, r, s, th) -> float | None:
        kind, price = self._decide(obs, r, s, th)
        top = _cents(r.ceiling_unit_price)
        if kind != "offer":
            # Taken, or out of time: a counter above the ceiling gets the ceiling as the
            # best and final offer (an accepted one could not be paid).
            return top if th.counter_price is not None and th.counter_price > top else None
        return min(price, top)

    def offer_reason(self, obs: Observation, r, s, th, offer: float) -> str:
        return f"{self.buyer.cls} offers {offer:.2f}; counter {th.counter_price:.2f}"

    def ready(self, obs: Observation, r, s, th, counter: float) -> bool:
        if obs.max_rounds is None and self.time_out(obs, r, s, th):
            return True
        return self._decide(obs, r, s, th)[0] != "offer"

    def ready_reason(self, obs: Observation, r, s, th, counter: float) -> str:
        kind = self._decide(obs, r, s, th)[0]
        if kind == "accept":
            return f"{self.buyer.cls} accepts {counter:.2f}"
        return f"{self.buyer.cls}'s negotiation is over: the counter is taken"

    # --- the replay --------------------------------------------------------------------
    def horizon(self, obs: Observation) -> int:
        """Offers the negotiator plans for (see the module docstring)."""
        return (obs.max_rounds + 1) if obs.max_rounds is not None else SAFE_ROUNDS + 1

    def _decide(self, obs: Observation, r, s, th) -> tuple[str, float | None]:
        """("accept", counter), ("offer", price) or ("over", None): the negotiator's answer
        to the thread's standing counter (none yet: its opening)."""
        rounds = [] if th is None else list(th.rounds)
        key = (obs.episode_key, r.id, None if s is None else s.id, len(rounds))
        memo = getattr(self, "_memo", None)
        if memo is not None and memo[0] == key:
            return memo[1]
        out = self._replay(obs, r, s, rounds)
        self._memo = (key, out)
        return out

    def _replay(self, obs: Observation, r, s, rounds: list) -> tuple[str, float | None]:
        import warnings

        H = self.horizon(obs)
        if len(rounds) >= H:
            return "over", None
        grid = _Grid(OPENING * r.reference_price, r.ceiling_unit_price)
        counters, last = [], grid.ceiling if s is None else s.list_prices[r.id]
        for rd in rounds:  # a round without a counter repeats the one before
            last = rd.supplier_price if rd.supplier_price is not None else last
            counters.append(grid.index(last))
        # Seeded by requirement, not supplier: the opening is replayed before a supplier
        # is chosen.
        base = (zlib.crc32(r.id.encode()) ^ (self.seed * 0x9E3779B1)) & 0xFFFFFFFFFFFF
        with warnings.catch_warnings(), _seeded(base):
            warnings.simplefilter("ignore")
            space, ufun = grid_space_and_utility()
            m = _mechanism_class()(outcome_space=space, n_steps=2 * H - 1, one_offer_per_step=True)
            buyer = self.buyer.make_negotiator()
            proxy = _proxy_seller_class()(counters, name="seller")
            m.add(buyer, ufun=ufun)
            m.add(proxy)
        # Steps 0, 2, ...: the buyer proposes (answering the counter before); 1, 3, ...:
        # the proxy rejects and counters. Step 2k answers the k-th counter.
        for step in range(2 * len(rounds) + 1):
            with warnings.catch_warnings(), _seeded(base + 7919 * (step + 1)):
                warnings.simplefilter("ignore")
                m.step()
            st = m.state
            if st.agreement is not None:
                return ("accept", rounds[-1].supplier_price) if rounds else ("over", None)
            if st.broken or st.timedout or not m.running:
                return "over", None
        st = m.state
        if st.current_proposer != buyer.id or st.current_offer is None:
            return "over", None
        return "offer", grid.price(int(st.current_offer[0]))


_proxy_cls: type | None = None


def _proxy_seller_class() -> type:
    """The seller inside the mechanism: proposes the recorded counters in turn, never
    accepts (in the engine the seller's accept is the thread's agreement)."""
    global _proxy_cls
    if _proxy_cls is None:
        from negmas import ResponseType
        from negmas.sao import SAONegotiator

        class ProxySeller(SAONegotiator):
            def __init__(self, counters: list[int], **kwargs: Any) -> None:
                super().__init__(**kwargs)
                self.counters = counters
                self.made = 0

            def propose(self, state, dest=None):
                i = min(self.made, len(self.counters) - 1)
                self.made += 1
                return (self.counters[i],) if self.counters else None

            def respond(self, state, source=None):
                return ResponseType.REJECT_OFFER

        _proxy_cls = ProxySeller
    return _proxy_cls


def make_field_buyer(name: str, seed: int = 0) -> Policy:
    """A fresh field buyer for one episode (KeyError for an unknown name)."""
    return FieldBuyerPolicy(name, seed=seed)
