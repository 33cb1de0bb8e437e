"""Field suppliers: third-party negotiation agents playing supplier personas.

`FieldSupplierPolicy` lets a negotiator from `negmas` (or one of the ANAC agents that
`negmas-genius-agents` re-implements in Python) play a supplier through the ordinary
`SupplierPolicy` interface, so every decision still passes through the hard-rule guard.
Both packages are optional (requirements/field.txt) and AGPL-3.0-or-later; they are
imported inside functions only, never when this module is imported.

How one thread is played. Each thread gets its own negmas `SAOMechanism` with two
negotiators: a proxy buyer whose proposals are the buyer's offers, and the field seller.
One `respond(ctx)` is one mechanism step (one SAO round): the proxy proposes the buyer's
offer, the seller accepts it or rejects it and proposes its own (our counter).

- Outcome space: one discrete price issue, a grid of 2 * GRID_STEPS + 1 prices from
  reservation - (anchor - reservation) up to the anchor; offers outside it are clipped.
- Utility: increasing in price. The task's utility is 0 at the reservation and 1 at the
  anchor; negmas sees its affine rescale (1 + u) / 2, which spans [0, 1] over the grid
  with the reserved value 0.5 at the reservation, because Genius agents assume utilities in
  [0, 1] (with negative utilities AgentK accepted a lowball far below the reservation).
  Time-based negotiators concede from the best outcome to the reserved value, so they
  never plan a counter below the reservation.
- Time: the mechanism has ``patience + 1`` steps, the last one being the last-chance
  offer (as for the rule personas, which decide at most patience + 1 offers). negmas's
  relative time at the k-th buyer offer is k / (patience + 2). A rejection at the last
  step is a walk-away: the negotiation has timed out.
- Determinism: a per-thread seed is drawn from ``ctx.rng`` when the thread is first
  answered. The Genius agents draw from the global `random` and `numpy.random` generators,
  so each mechanism step runs with both seeded from that per-thread stream and restored
  afterwards. The mechanism's clock is frozen at 0 (`_mechanism_class`): negmas 0.16's
  `Mechanism.step` draws one extra number from the global `random` (its
  ``pend_per_second`` trial) at the first step after each new whole second of wall time
  since the mechanism started, which shifts every draw the seller makes in that step. A
  thread's mechanism lives across the whole episode, so on a loaded machine a thread
  could cross a second and the episode changed with the load. With the clock at 0 no
  step ever draws it (as on a quiet machine); all limits here are in steps anyway.
- Counters are kept within the guard's band and never above the last counter (see
  `respond`); accepts are passed on as the agent made them, so an agent that accepts below
  the reservation is repaired, and counted, by the guard.
- Messages: the shared persona message pool (`suppliers.pick_message`), worded in the
  voice of the strategy's base persona.

As supplier personas. Each strategy name (``field_boulware``, ...) is a persona a
scenario may name in ``persona_mix`` or ``bilateral_persona`` (config.py validates it and
asks for requirements/field.txt where the packages are missing). A field supplier's hidden
numbers (costs, margins, list price, reliability, capacity claims, stress, patience...),
reputation notes and demeanour tells come from its base rule persona (``FieldStrategy.base``,
`base_persona`); ``SupplierHidden.persona`` keeps the field name, which the environment maps
to one FieldSupplierPolicy per field persona (suppliers.cast.supplier_policies).
"""

from __future__ import annotations

import functools
import math
import random
from collections import OrderedDict
from collections.abc import Callable
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from .guard import ProposedDecision, band_floor
from .rule import SupplierContext, SupplierPolicy, pick_message

GRID_STEPS = 200  # price levels between the reservation and the anchor
MAX_SESSIONS = 4096  # live threads remembered per policy (least recently used dropped)
FIELD_ACTOR = "field:"  # a field decision's actor on the step record: "field:<persona>"


@dataclass(frozen=True, slots=True)
class FieldStrategy:
    """One field persona: which negotiator plays it, and the rule persona it is based on
    (its hidden numbers, reputation notes, demeanour and the wording of its replies)."""

    name: str
    module: str  # where the negotiator class lives
    cls: str
    base: str  # a rule persona (config.PERSONAS)
    kwargs: tuple[tuple[str, Any], ...] = ()

    @property
    def voice(self) -> str:
        """The rule persona whose message weights the replies use: the base persona."""
        return self.base

    def make_negotiator(self) -> Any:
        import importlib

        neg_cls = getattr(importlib.import_module(self.module), self.cls)
        return neg_cls(name="seller", **dict(self.kwargs))


_SAO = "negmas.sao"
_GENIUS = "negmas_genius_agents"

STRATEGIES: dict[str, FieldStrategy] = {
    s.name: s
    for s in (
        # negmas's own time-based aspiration negotiators (Faratin-style curves).
        FieldStrategy("field_boulware", _SAO, "BoulwareTBNegotiator", "hardball"),
        FieldStrategy("field_linear", _SAO, "LinearTBNegotiator", "cooperative"),
        FieldStrategy("field_conceder", _SAO, "ConcederTBNegotiator", "cooperative"),
        # negmas's naive tit-for-tat: mirrors the buyer's approach in its own utility.
        FieldStrategy("field_tit_for_tat", _SAO, "NaiveTitForTatNegotiator", "cooperative"),
        # ANAC winners re-implemented by negmas-genius-agents.
        FieldStrategy("field_agent_k", _GENIUS, "AgentK", "hardball"),  # ANAC 2010
        FieldStrategy("field_hardheaded", _GENIUS, "HardHeaded", "hardball"),  # ANAC 2011
    )
}

# Field persona -> its base rule persona. Deceptive is no base: its distortions (inflated
# ratings and capacity claims, misleading tells) belong to the rule persona's tactics.
FIELD_BASE: dict[str, str] = {name: s.base for name, s in STRATEGIES.items()}
FIELD_INSTALL = "pip install -r requirements/field.txt"


def base_persona(persona: str) -> str:
    """The rule persona whose parameters a persona draws: itself for a rule persona."""
    return FIELD_BASE.get(persona, persona)


class FieldSupplierPolicy(SupplierPolicy):
    """A negmas negotiator as a supplier; one SAOMechanism per negotiation thread."""

    name = "field"

    def __init__(self, strategy: str) -> None:
        if strategy not in STRATEGIES:
            raise KeyError(f"unknown field strategy {strategy!r}; known: {sorted(STRATEGIES)}")
        self.strategy = STRATEGIES[strategy]
        self.actor = FIELD_ACTOR + strategy  # who answered, on the step's record
        self._sessions: OrderedDict[int, _Session] = OrderedDict()

    def respond(self, ctx: SupplierContext) -> ProposedDecision:
        th = ctx.thread
        key = id(th)
        session = self._sessions.get(key)
        if session is None or session.thread is not th or session.finished:
            # A thread answered for the first time (or forgotten, or reopened after the
            # guard overrode an agreement): the seller keeps the deadline it has left.
            steps = max(1, th.patience + 2 - ctx.round)
            session = _Session(th, self.strategy, steps, ctx.rng.getrandbits(64))
            self._sessions[key] = session
        self._sessions.move_to_end(key)
        while len(self._sessions) > MAX_SESSIONS:
            self._sessions.popitem(last=False)
        kind, price = session.step(ctx.offer)
        if kind == "counter" and price is not None:
            # Keep counters where a rule persona keeps them: above the guard's no-reveal
            # band (a negmas seller concedes to the reservation itself) and never above the
            # last counter (tit-for-tat may step back up). The guard would repair both too,
            # but as interventions, a count kept for real rule breaks.
            price = max(price, band_floor(th.reservation))
            if th.last_counter is not None:
                price = min(price, th.last_counter)
        if session.finished:
            self._sessions.pop(key, None)
        voice = self.strategy.voice
        if kind == "accept":
            price = ctx.offer
        elif kind == "walk_away":
            price = None
        return ProposedDecision(kind, price, pick_message(ctx.rng, kind, voice), actor=self.actor)


def seller_utility(price: float, reservation: float, anchor: float) -> float:
    """The seller's utility: 0 at the reservation, 1 at the anchor, linear in price."""
    return (price - reservation) / _span(reservation, anchor)


def _span(reservation: float, anchor: float) -> float:
    return max(anchor - reservation, 0.01 * abs(reservation), 1e-6)


@contextmanager
def _seeded(seed: int):
    """Run with the global `random` and `numpy.random` generators seeded, then restore
    them: the re-implemented Genius agents draw from both."""
    import numpy as np

    _grid_api()  # a first import of negmas draws from the global generator: not in here
    py_state, np_state = random.getstate(), np.random.get_state()
    random.seed(seed)
    np.random.seed(seed & 0xFFFFFFFF)
    try:
        yield
    finally:
        random.setstate(py_state)
        np.random.set_state(np_state)


class _Session:
    """One thread's SAOMechanism: proxy buyer first, the field seller second."""

    __slots__ = (
        "buyer",
        "finished",
        "lo",
        "mechanism",
        "n_steps",
        "rng",
        "seller",
        "step_size",
        "thread",
    )

    def __init__(self, thread: Any, strategy: FieldStrategy, n_steps: int, seed: int) -> None:
        import warnings

        self.thread = thread
        self.rng = random.Random(seed)
        self.n_steps = n_steps
        self.finished = False
        res = thread.reservation
        self.step_size = _span(res, thread.anchor) / GRID_STEPS
        self.lo = res - GRID_STEPS * self.step_size  # grid index 0; GRID_STEPS = reservation
        # negmas names its objects with draws from the global generator: seed that too.
        with warnings.catch_warnings(), _seeded(self.rng.getrandbits(64)):
            warnings.simplefilter("ignore")
            space, ufun = grid_space_and_utility()  # 0.5 at the reservation, 1 at the anchor
            self.mechanism = _mechanism_class()(outcome_space=space, n_steps=n_steps)
            self.buyer = _proxy_buyer_class()(name="buyer")
            self.seller = strategy.make_negotiator()
            self.mechanism.add(self.buyer)
            self.mechanism.add(self.seller, ufun=ufun)

    def price(self, index: int) -> float:
        return round(self.lo + index * self.step_size, 2)

    def index(self, price: float) -> int:
        """The grid point at or below ``price``: the seller never overrates an offer."""
        if not math.isfinite(price):
            return 0
        i = math.floor((price - self.lo) / self.step_size + 1e-9)
        return max(0, min(2 * GRID_STEPS, i))

    def step(self, offer: float) -> tuple[str, float | None]:
        """Run one SAO round on the buyer's offer: (accept | counter | walk_away, price)."""
        import warnings

        m = self.mechanism
        self.buyer.pending = (self.index(offer),)
        with warnings.catch_warnings(), _seeded(self.rng.getrandbits(64)):
            warnings.simplefilter("ignore")
            m.step()
        st = m.state
        if st.agreement is not None:
            self.finished = True
            return "accept", offer
        if (
            st.broken
            or st.timedout
            or not m.running
            or st.current_proposer != self.seller.id
            or st.current_offer is None
            or st.step >= self.n_steps
        ):
            # The seller ended the negotiation, or rejected the last-chance offer.
            self.finished = True
            return "walk_away", None
        return "counter", self.price(int(st.current_offer[0]))


@functools.cache
@functools.cache
def _grid_api() -> tuple[Any, Any, Any, Any]:
    from negmas import make_issue
    from negmas.outcomes import make_os
    from negmas.preferences import LinearAdditiveUtilityFunction
    from negmas.preferences.value_fun import LinearFun

    return make_issue, make_os, LinearAdditiveUtilityFunction, LinearFun


def grid_space_and_utility() -> tuple[Any, Any]:
    """The price grid (indices 0..2 * GRID_STEPS) as a negmas outcome space, and the
    linear utility index / top over it with reserved value 0.5 (the grid's middle).

    Call it under ``_seeded``: negmas names its objects with global random draws."""
    make_issue, make_os, LinearAdditiveUtilityFunction, LinearFun = _grid_api()
    top = 2 * GRID_STEPS
    space = make_os([make_issue((0, top), name="price")])
    ufun = LinearAdditiveUtilityFunction(
        values=[LinearFun(1.0 / top)], weights=[1.0], outcome_space=space, reserved_value=0.5
    )
    return space, ufun


def _mechanism_class() -> type:
    """An SAOMechanism whose clock always reads 0 seconds: play never depends on wall time.

    `Mechanism.step` (negmas/mechanisms.py) draws ``random.random()`` whenever
    ``int(self.time)`` passes the last whole second it tried, whatever ``pend_per_second``
    is; everything else that reads ``time`` here is against infinite time limits. Stats
    (round and negotiator times) still use the real clock; nothing here reads them."""
    from negmas.sao import SAOMechanism

    class StepClockMechanism(SAOMechanism):
        @property
        def time(self) -> float:
            return 0.0

    return StepClockMechanism


@functools.cache
def _proxy_buyer_class() -> type:
    """The buyer inside the mechanism: proposes the buyer's offer, never accepts there
    (in the engine the buyer takes a counter by offering or awarding at it)."""
    from negmas import ResponseType
    from negmas.sao import SAONegotiator

    class ProxyBuyer(SAONegotiator):
        pending: tuple[int, ...] | None = None

        def propose(self, state, dest=None):
            return self.pending

        def respond(self, state, source=None):
            return ResponseType.REJECT_OFFER

    return ProxyBuyer


# persona name -> constructor of a fresh policy (one per environment: it keeps per-thread
# negotiation state).
FIELD_STRATEGIES: dict[str, Callable[[], FieldSupplierPolicy]] = {
    name: functools.partial(FieldSupplierPolicy, name) for name in STRATEGIES
}


def available_field_strategies() -> list[str]:
    """The field personas whose packages import here (the ANAC ones need
    negmas-genius-agents)."""
    import importlib.util

    return [
        name
        for name, s in STRATEGIES.items()
        if importlib.util.find_spec(s.module.split(".")[0]) is not None
    ]
