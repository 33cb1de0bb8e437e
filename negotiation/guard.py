"""The hard-rule guard. EVERY supplier decision (rule persona or LLM) passes through it.

Rules enforced here (rule 4, binding agreements, is enforced by the environment: awards
always use the stored agreed/standing price, never a price named by the buyer):
1. never accept, and never counter, below the reservation; counters additionally keep a
   no-reveal band above it (>= reservation * (1 + BAND)) so a counter never equals it;
2. never reveal the reservation: price-like numbers in the message other than the decision
   price and the buyer's own offer are replaced by "[figure withheld]";
3. counters are monotone toward the buyer within a thread (never above the last counter);
plus sanity: an accept is always at the buyer's offer, a counter at or below the buyer's
offer becomes an accept, unknown decision kinds and non-finite prices are repaired.
Each repair counts one intervention.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

BAND = 0.02
WITHHELD = "[figure withheld]"
_NUM = re.compile(r"\d[\d,]*(?:\.\d+)?")


@dataclass(slots=True)
class ProposedDecision:
    """What a supplier policy wants to do. A "{price}" in `message` becomes the decided
    price."""

    kind: str  # accept | counter | walk_away
    price: float | None
    message: str


@dataclass(slots=True)
class GuardedDecision:
    kind: str
    price: float | None
    message: str
    interventions: int


def band_floor(reservation: float) -> float:
    """Lowest allowed counter: reservation + band, rounded up to the cent."""
    return math.ceil(reservation * (1.0 + BAND) * 100.0 - 1e-9) / 100.0


def fmt_price(p: float) -> str:
    return f"{p:,.2f}"


def _redact(message: str, reservation: float, keep: tuple[float, ...]) -> tuple[str, int]:
    if not message:
        return message, 0
    hits = 0

    def repl(m: re.Match[str]) -> str:
        nonlocal hits
        try:
            x = float(m.group(0).replace(",", ""))
        except ValueError:
            return m.group(0)
        if 0.5 * reservation <= x <= 2.0 * reservation:
            for k in keep:
                if abs(x - k) <= 0.006:
                    return m.group(0)
            hits += 1
            return WITHHELD
        return m.group(0)

    out = _NUM.sub(repl, message)
    return out, hits


class HardRuleGuard:
    """Stateless checker; the per-thread state (last counter) is passed in."""

    def apply(
        self,
        proposal: ProposedDecision,
        offer: float,
        reservation: float,
        last_counter: float | None,
    ) -> GuardedDecision:
        n = 0
        kind = proposal.kind
        price = proposal.price
        if kind not in ("accept", "counter", "walk_away"):
            n += 1
            kind = "counter"
            price = last_counter
        if kind == "accept":
            if price is None or abs(price - offer) > 1e-9:
                n += 1  # an accept is always at the buyer's offer
            price = offer
            if offer < reservation:  # rule 1
                n += 1
                kind = "counter"
                price = last_counter if last_counter is not None else band_floor(reservation) * 1.1
        if kind == "counter":
            if price is None or not math.isfinite(price):
                n += 1
                price = last_counter if last_counter is not None else band_floor(reservation) * 1.1
            floor = band_floor(reservation)
            if price < floor:  # rule 1 + no-reveal band
                n += 1
                price = floor
            if last_counter is not None and price > last_counter + 1e-9:  # rule 3
                n += 1
                price = last_counter
            price = round(price, 2)
            if price <= offer:
                # Countering at or below the buyer's own offer makes no sense: accept it.
                kind, price = "accept", offer
                if offer < reservation:  # cannot happen (price >= floor > reservation)
                    kind, price = "counter", floor
        if kind == "walk_away":
            price = None
        message = proposal.message
        if "{price}" in message:
            message = message.replace("{price}", fmt_price(price) if price is not None else "")
        keep = (offer,) if price is None else (offer, price)
        message, hits = _redact(message, reservation, keep)
        if hits:
            n += 1
        return GuardedDecision(kind, price, message, n)
