"""The hard-rule guard. EVERY supplier decision (rule persona or LLM) passes through it.

Rules enforced here (rule 4, binding agreements, is enforced by the environment: awards
always use the stored agreed/standing price, never a price named by the buyer):
1. never accept, and never counter, below the reservation; counters additionally keep a
   no-reveal band above it (>= reservation * (1 + BAND)) so a counter never equals it;
2. never reveal the reservation: price-like numbers in the message other than the decision
   price and the buyer's own offer are replaced by "[figure withheld]", whether written
   in digits ("812.40", "1.2k") or in words ("eight hundred twelve", "eight one two"):
   a language-model supplier spells numbers out as readily as it writes them;
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
_NUM = re.compile(r"\d[\d,]*(?:\.\d+)?(?:\s?(?:k|K|thousand)\b)?")

SMALL_NUMBER_WORDS = [
    "zero",
    "one",
    "two",
    "three",
    "four",
    "five",
    "six",
    "seven",
    "eight",
    "nine",
    "ten",
    "eleven",
    "twelve",
    "thirteen",
    "fourteen",
    "fifteen",
    "sixteen",
    "seventeen",
    "eighteen",
    "nineteen",
]
TENS_WORDS = ["twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety"]
_WORD_VALUE = {w: i for i, w in enumerate(SMALL_NUMBER_WORDS)} | {
    w: 20 + 10 * i for i, w in enumerate(TENS_WORDS)
}
_SCALE = {"hundred": 100, "thousand": 1_000, "grand": 1_000, "million": 1_000_000}
_NUM_WORD = "|".join(sorted([*_WORD_VALUE, *_SCALE], key=len, reverse=True))
# A run of number words, joined by spaces/hyphens and optionally "and" / "point".
_WORDS = re.compile(
    rf"\b(?:{_NUM_WORD})(?:[\s-]+(?:(?:and|point)[\s-]+)?(?:{_NUM_WORD}))*\b", re.IGNORECASE
)
# Cheap pre-check: most messages hold no number word, and the alternation above is slow.
_LETTERS = re.compile(r"[a-z]+")
_NUMBER_WORDS = frozenset([*_WORD_VALUE, *_SCALE])
# The same pre-check for ASCII text at a third of the cost (every supplier reply is
# checked): bytes.translate turns each byte but a-z into a space, so split() yields
# exactly the runs _LETTERS finds.
_ONLY_LETTERS = bytes(c if 97 <= c <= 122 else 32 for c in range(256))
_NUMBER_WORDS_ASCII = frozenset(w.encode() for w in _NUMBER_WORDS)


def has_number_word(text: str) -> bool:
    """Whether some maximal run of letters a-z in ``text.lower()`` is a number word."""
    low = text.lower()
    if low.isascii():
        return not _NUMBER_WORDS_ASCII.isdisjoint(low.encode().translate(_ONLY_LETTERS).split())
    return not _NUMBER_WORDS.isdisjoint(_LETTERS.findall(low))


@dataclass(slots=True)
class ProposedDecision:
    """What a supplier policy wants to do. A "{price}" in `message` becomes the decided
    price."""

    kind: str  # accept | counter | walk_away
    price: float | None
    message: str
    # Who decided ("rule", "llm", "fallback:rule"), and why an LLM supplier fell back
    # ("parse" | "backend"); recorded per step, never shown to the buyer.
    actor: str = "rule"
    failure: str | None = None


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


def _digits_value(text: str) -> float | None:
    """812.40 / 1,200 / 1.2k / 3 thousand -> the number."""
    scale = 1.0
    low = text.lower()
    for suffix in ("thousand", "k"):
        if low.endswith(suffix):
            text, scale = text[: -len(suffix)], 1000.0
            break
    try:
        return float(text.replace(",", "").strip()) * scale
    except ValueError:
        return None


def words_value(text: str) -> float | None:
    """The number a run of English number words spells: "eight hundred (and) twelve",
    "twelve hundred fifty", "eight one two" (digit by digit), "... point four zero"."""
    words = [w for w in re.split(r"[\s-]+", text.lower()) if w and w != "and"]
    if "point" in words:
        i = words.index("point")
        whole, frac = words[:i], words[i + 1 :]
    else:
        whole, frac = words, []
    if not whole or any(w not in _WORD_VALUE and w not in _SCALE for w in whole + frac):
        return None
    if len(whole) >= 2 and all(_WORD_VALUE.get(w, 99) <= 9 for w in whole):
        value = float("".join(str(_WORD_VALUE[w]) for w in whole))  # "eight one two"
    else:
        total = current = 0
        for w in whole:
            if w in _WORD_VALUE:
                current += _WORD_VALUE[w]
            elif w == "hundred":
                current = (current or 1) * 100
            else:
                total += (current or 1) * _SCALE[w]
                current = 0
        value = float(total + current)
    if frac:
        digits = "".join(str(_WORD_VALUE.get(w, "")) for w in frac)
        value += float("0." + digits) if digits.isdigit() else 0.0
    return value


def _redact(message: str, reservation: float, keep: tuple[float, ...]) -> tuple[str, int]:
    if not message:
        return message, 0
    hits = 0

    def redactor(value_of):
        def repl(m: re.Match[str]) -> str:
            nonlocal hits
            x = value_of(m.group(0))
            if x is None or not 0.5 * reservation <= x <= 2.0 * reservation:
                return m.group(0)
            for k in keep:
                if abs(x - k) <= 0.006:
                    return m.group(0)
            hits += 1
            return WITHHELD

        return repl

    out = _NUM.sub(redactor(_digits_value), message)
    if has_number_word(out):
        out = _WORDS.sub(redactor(words_value), out)
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
