"""Held-out sellers: supplier agents outside the documented concession model
(concession.py), for measuring buyers against sellers nobody tuned on.

No scenario names them, so they never play in a default game: a bench or a test puts one
in front of a bilateral buyer with ``install(env, family)`` before ``env.reset``, which
answers for the scenario's bilateral persona (its hidden numbers, the floor included,
still come from that rule persona). Each agent is a pure function of the thread's hidden
record and the offer (its per-thread draws are seeded from the thread's hidden prices), so
an episode is decided by its seed alone.

- ``floor_walk``: concedes linearly from its anchor to its floor in ``reach`` answers (2-4),
  then sits at the floor; at the ``patience``-th offer below the floor after it first
  countered there (2-4) it walks.
- ``fixed_price``: one price, drawn between its floor and the midpoint to its anchor,
  from the first counter on; walks at the ``patience``-th offer under it (2-5).
- ``impatient``: concedes fast (a Conceder curve, 1-3 answers to the floor) and walks at
  the second offer below its floor after it first countered there.
- ``erratic``: a random walk down from the anchor: each answer keeps its ask or drops it by
  a random share of the gap to its floor, no tactic of concession.py behind it; at its
  patience (the public round limit) it walks from an offer under its ask, as a rule
  seller does.
- ``grudge``: the base rule persona itself, except that it walks at once from an offer
  under one the buyer made before on the thread: a person or a language-model seller
  reads a retraction as bad faith (the SmolLM2 supplier walks on one), while the rule
  personas answer the buyer's best offer so far and never punish it.

All accept an offer at or above their ask of the moment and never counter above their last
counter. ``walk_line(family, th)`` is the lowest price the agent ever accepts: the bench
calls a deal possible when it is under the buyer's ceiling.
"""

from __future__ import annotations

import random

from .field import FIELD_ACTOR
from .guard import ProposedDecision
from .rule import RULE_POLICY, SupplierContext, SupplierPolicy, pick_message

AGENTS = ("floor_walk", "fixed_price", "impatient", "erratic")  # HeldOutSeller's own
FAMILIES = (*AGENTS, "grudge")
VOICE = "hardball"  # whose phrasing the replies lean to


def _draws(family: str, th) -> random.Random:
    """The thread's own generator: seeded from its hidden prices (a str seed is hashed with
    sha512, the same in every process)."""
    return random.Random(f"{family}|{th.anchor:.6f}|{th.floor:.6f}|{th.reservation:.6f}")


def _params(family: str, th) -> tuple[float, int, int]:
    """(fixed price or 0, reach, patience) for a thread."""
    rng = _draws(family, th)
    if family == "floor_walk":
        return 0.0, rng.randint(2, 4), rng.randint(2, 4)
    if family == "fixed_price":
        return th.floor + rng.uniform(0.0, 0.5) * (th.anchor - th.floor), 0, rng.randint(2, 5)
    if family == "impatient":
        return 0.0, rng.randint(1, 3), 2
    return 0.0, 0, 0


def walk_line(family: str, th) -> float:
    """The lowest price the agent accepts on this thread."""
    fixed, _, _ = _params(family, th)
    return fixed or th.floor


def _ask(family: str, th, k: int) -> float:
    """The agent's ask after the buyer's k-th offer (before the floor clamp)."""
    fixed, reach, _ = _params(family, th)
    gap = th.anchor - th.floor
    if family == "fixed_price":
        return fixed
    if family == "floor_walk":
        return th.floor + gap * max(0.0, 1.0 - k / reach)
    if family == "impatient":
        return th.floor + gap * (1.0 - min(1.0, k / reach) ** (1.0 / 3.0))
    # erratic: a random walk, one draw per answer, replayed from the thread's seed
    rng, ask = _draws(family, th), th.anchor
    for _ in range(k):
        if rng.random() < 0.6:
            ask -= (ask - th.floor) * rng.uniform(0.05, 0.6)
    return ask


class HeldOutSeller(SupplierPolicy):
    """One held-out seller family (FAMILIES) answering for a bilateral persona."""

    name = "heldout"

    def __init__(self, family: str) -> None:
        if family not in AGENTS:
            raise KeyError(f"unknown held-out agent {family!r}; known: {', '.join(AGENTS)}")
        self.family = family
        self.actor = f"{FIELD_ACTOR}heldout_{family}"

    def respond(self, ctx: SupplierContext) -> ProposedDecision:
        th, k, offer = ctx.thread, ctx.round, ctx.offer
        line = walk_line(self.family, th)
        ask = max(line, _ask(self.family, th, k))
        if th.last_counter is not None:
            ask = min(ask, th.last_counter)
        ask = round(ask, 2)
        if offer >= ask:
            return _say(ctx, "accept", offer, self.actor)
        if self._walks(th, k, ask, line):
            return _say(ctx, "walk_away", None, self.actor)
        th.offers.append(offer)
        th.asks.append(ask)
        return _say(ctx, "counter", ask, self.actor)

    def _walks(self, th, k: int, ask: float, line: float) -> bool:
        """Whether the agent walks from an offer under its ask ``ask``."""
        if k > th.patience:
            return True
        _, _, patience = _params(self.family, th)
        if not patience:
            return False
        # Offers under the walk line since it first countered at it (this one included).
        at_line = [i for i, a in enumerate(th.asks) if a <= round(line, 2) + 1e-9]
        if ask > round(line, 2) + 1e-9 or not at_line:
            return False
        return len(th.asks) - at_line[0] >= patience


class GrudgeSeller(SupplierPolicy):
    """The persona's own seller ``base`` (its rule policy by default), walking at once
    from an offer under one the buyer made before on the thread."""

    name = "heldout"
    actor = f"{FIELD_ACTOR}heldout_grudge"

    def __init__(self, base: SupplierPolicy | None = None) -> None:
        self.base = base or RULE_POLICY

    def respond(self, ctx: SupplierContext) -> ProposedDecision:
        # A rule persona's record keeps the buyer's best offer so far (concession.py).
        best = ctx.thread.offers[-1] if ctx.thread.offers else None
        if best is not None and ctx.offer < round(best, 2):
            return _say(ctx, "walk_away", None, self.actor)
        return self.base.respond(ctx)


def _say(ctx: SupplierContext, kind: str, price: float | None, actor: str) -> ProposedDecision:
    """A held-out seller's decision, worded in VOICE."""
    return ProposedDecision(kind, price, pick_message(ctx.rng, kind, VOICE), actor=actor)


def install(env, family: str) -> None:
    """Let ``family`` answer for ``env``'s bilateral persona from its next reset on."""
    persona = env.cfg.bilateral_persona
    if family == "grudge":
        seller: SupplierPolicy = GrudgeSeller(env.supplier_policies.get(persona))
    elif family in AGENTS:
        seller = HeldOutSeller(family)
    else:
        raise KeyError(f"unknown held-out family {family!r}; known: {', '.join(FAMILIES)}")
    env.supplier_policies[persona] = seller
