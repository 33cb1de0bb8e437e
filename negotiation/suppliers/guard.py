"""The hard-rule guard. EVERY supplier decision (rule persona or LLM) passes through it.

Rules enforced here (rule 4, binding agreements, is enforced by the environment: awards
always use the stored agreed/standing price, never a price named by the buyer):
1. never accept, and never counter, below the reservation; counters additionally keep a
   no-reveal band above it (>= reservation * (1 + BAND)) so a counter never equals it;
2. never reveal the brief: a message is REPLACED by a neutral line that states the
   guarded decision (NEUTRAL) when it
   - restates its private instructions (RESTATED: OVERLAP_WORDS consecutive words shared
     with the brief the proposer was given),
   - uses a give-away word of the brief (PERSONA_WORDS: brief.GIVEAWAY),
   - names a figure at or below the reservation (LOW_FIGURE), or
   - contradicts the decision (CONTRADICTS): another price than the decision price, the
     buyer's offer or the standing counter, one of these two without the decision price
     (a walk-away names none), an acceptance while countering or walking away, a refusal
     while accepting, or any message of a decision a price rule repaired (it was written
     for another kind or price) unless the proposer wrote it for the very decision the
     guard holds (ProposedDecision.written_for);
   - names a price as the wrong side's (MISSTATED), while countering: the buyer's
     offer as the seller's own ("we can offer you {offer}", the nearest speaker before it
     in its clause "we"/"I"/"our", not negated), the counter price as the buyer's ("your
     offer of {price}"), or any figure called "too high" or the counter "too low" (a
     seller finds only the buyer's price too low), or either price as a percentage;
   figures count in digits ("812.40", "1.2k") or in words ("eight hundred twelve", "eight
   one two"): a language-model supplier spells numbers out as readily as it writes them;
3. counters are monotone toward the buyer within a thread (never above the last counter);
plus sanity: an accept is always at the buyer's offer, a counter at or below the buyer's
offer becomes an accept, unknown decision kinds and non-finite prices are repaired.

Each broken rule is one repair, recorded with its reason (a short public phrase, never a
secret's value); ``guard_interventions`` counts repairs. Rule personas' messages break
none of these (tests hold every message of the shared pool to that).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from dataclasses import dataclass

from .brief import GIVEAWAY

BAND = 0.02
# Repair reasons, as the step record lists them.
UNKNOWN_KIND = "unknown decision"
ACCEPT_OFF_OFFER = "accept not at the offer"
ACCEPT_BELOW_FLOOR = "accept below floor"
NO_PRICE = "counter without a price"
COUNTER_BELOW_FLOOR = "counter below floor"
COUNTER_RAISED = "counter above the last one"
RESTATED = "restated instructions"
PERSONA_WORDS = "persona words"
LOW_FIGURE = "figure at or below floor"
CONTRADICTS = "contradicts the decision"
MISSTATED = "misstates a price"
# Reasons whose row would give the floor away (the repaired price sits on its band):
# anyone who reads a stored episode, a buyer's seat included, sees this label instead.
FLOOR_REASONS = frozenset({ACCEPT_BELOW_FLOOR, COUNTER_BELOW_FLOOR})
PRICE_HELD = "price held to the hard rules"


def public_repairs(reasons: Iterable[str]) -> list[str]:
    """A step's repair reasons as a stored episode shows them."""
    return [PRICE_HELD if r in FLOOR_REASONS else r for r in reasons]


# What a refused message becomes: the guarded decision, plainly.
NEUTRAL = {
    "accept": "We can accept {price} per unit.",
    "counter": "Our best price for now is {price} per unit.",
    "walk_away": "We cannot go on with this negotiation.",
}
OVERLAP_WORDS = 5  # this many consecutive words shared with the brief restate it
# Figures between these multiples of the reservation are prices (not weeks or units).
PRICE_LIKE = (0.5, 3.0)
_SAME = 0.006  # figures this close are the same price written to the cent
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
    # The private brief the proposer was given (an LLM's prompt): its message must not
    # restate it. Rule personas have none.
    instructions: str = ""
    # Whether rule 2 screens the message: a person's own words (suppliers/seat.py) pass
    # as typed; the price rules hold for everyone.
    screen: bool = True
    # The (kind, price) the message was written for, when the proposer learned the held
    # decision first (hold_prices) and worded its message for it: if the guard holds that
    # very decision, a price repair alone does not refuse the message; it is screened as
    # any other. None: written for the proposed decision.
    written_for: tuple[str, float | None] | None = None


@dataclass(slots=True)
class GuardedDecision:
    kind: str
    price: float | None
    message: str
    repairs: tuple[str, ...] = ()  # one reason per broken rule

    @property
    def interventions(self) -> int:
        return len(self.repairs)


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


def _figure_spans(message: str) -> list[tuple[float, int, int]]:
    """Every number ``message`` names, in digits or in words, with its span. A lone "one"
    is the pronoun ("this one"), not a figure."""
    out = [
        (x, m.start(), m.end())
        for m in _NUM.finditer(message)
        if (x := _digits_value(m.group(0))) is not None
    ]
    if has_number_word(message):
        for m in _WORDS.finditer(message):
            if m.group(0).lower() != "one" and (x := words_value(m.group(0))) is not None:
                out.append((x, m.start(), m.end()))
    return out


def _figures(message: str) -> list[float]:
    return [x for x, _, _ in _figure_spans(message)]


# Who a figure belongs to, read from its clause: the nearest speaker word before it.
_CLAUSE_END = re.compile(r"[.;!?:]\s")
_THANKS = re.compile(r"\bthank\s+you\b", re.IGNORECASE)
_SPEAKER = re.compile(r"\b(we|i|our|my|us|me|you|your)\b", re.IGNORECASE)
_BUYERS = re.compile(r"\b(?:offer|offered|offering|bid|propos\w*)\b", re.IGNORECASE)
_TOO_HIGH = re.compile(
    r"^\W*(?:per unit\W*)?(?:is|seems|sounds|looks)?\s*(?:a bit\s+)?too\s+(high|much|low)",
    re.IGNORECASE,
)


_TO_YOU = re.compile(r"\b(?:offer|give|sell|quote|charge|let|do|for|to|get)\s+$", re.IGNORECASE)
_PERCENT = re.compile(r"\s*(?:%|per\s*cent|percent)", re.IGNORECASE)


def _owner(message: str, start: int) -> str | None:
    """ "seller" when the nearest speaker word before ``start`` in its clause is the
    seller's own and no negation stands between them ("we can do 12.00", not "we cannot go
    to 12.00"); "buyer" for "your offer of 12.00"; None when the clause does not say."""
    before = message[:start]
    cut = max((m.end() for m in _CLAUSE_END.finditer(before)), default=0)
    clause = _THANKS.sub(" ", before[cut:])
    # "you" as an object ("we can offer you 12.00") does not speak
    speakers = [
        m
        for m in _SPEAKER.finditer(clause)
        if m.group(1).lower() != "you" or not _TO_YOU.search(clause[: m.start()])
    ]
    if not speakers:
        return None
    last = speakers[-1]
    between = clause[last.end() :]
    if last.group(1).lower() in ("you", "your"):
        return "buyer" if _BUYERS.search(between) else None
    words = _tokens(between)
    if any(w in _NEGATORS or w.endswith("n't") for w in words):
        return None
    return "seller"


def misattributes(message: str, price: float, offer: float) -> bool:
    """While countering at ``price`` against the buyer's ``offer``: whether ``message``
    names the offer as the seller's price, the counter as the buyer's, calls a figure too
    high or the counter too low, or writes either as a percentage."""
    for x, start, end in _figure_spans(message):
        is_price, is_offer = abs(x - price) <= _SAME, abs(x - offer) <= _SAME
        if not (is_price or is_offer):
            continue
        if _PERCENT.match(message[end:]):
            return True
        judged = _TOO_HIGH.match(message[end:])
        if judged and (judged.group(1).lower() != "low" or is_price):
            return True
        owner = _owner(message, start)
        if (is_offer and not is_price and owner == "seller") or (is_price and owner == "buyer"):
            return True
    return False


_WORD = re.compile(r"[a-z0-9]+(?:'[a-z]+)?")
_ACCEPTING = re.compile(r"accept(?:s|ed|ing)?|agree(?:s|d)?|deal")
_NEGATORS = frozenset(("not", "no", "never", "cannot", "unable", "nor", "neither"))
_NEGATION_REACH = 3  # words before an "accept" that may negate it


def _tokens(text: str) -> list[str]:
    return _WORD.findall(text.lower().replace("\u2019", "'"))


def _acceptances(words: list[str]) -> tuple[bool, bool]:
    """(says yes, says no): an accepting word, plain or negated ("cannot accept")."""
    yes = no = False
    for i, w in enumerate(words):
        if _ACCEPTING.fullmatch(w):
            before = words[max(0, i - _NEGATION_REACH) : i]
            if any(b in _NEGATORS or b.endswith("n't") for b in before):
                no = True
            elif w != "deal":  # "a deal at {price}" is a counter's pitch too
                yes = True
    return yes, no


def _restates(words: list[str], instructions: str) -> bool:
    brief = _tokens(instructions)
    n = OVERLAP_WORDS
    grams = {tuple(brief[i : i + n]) for i in range(len(brief) - n + 1)}
    return any(tuple(words[i : i + n]) in grams for i in range(len(words) - n + 1))


def screen(
    message: str,
    kind: str,
    price: float | None,
    public: tuple[float, ...],
    reservation: float,
    instructions: str = "",
) -> tuple[str, ...]:
    """Why ``message`` may not reach the buyer with this decision (empty: it may).
    ``public``: the other figures it may name, next to the decision ``price`` (the buyer's
    offer first, then the standing counter); a walk-away names none."""
    if not message:
        return ()
    reasons = []
    words = _tokens(message)
    if instructions and _restates(words, instructions):
        reasons.append(RESTATED)
    if GIVEAWAY.search(message):
        reasons.append(PERSONA_WORDS)
    low = other = names_price = names_public = False
    lo, hi = PRICE_LIKE[0] * reservation, PRICE_LIKE[1] * reservation
    for x in _figures(message):
        if not lo <= x <= hi:
            continue
        if price is not None and abs(x - price) <= _SAME:
            names_price = True
        elif any(abs(x - k) <= _SAME for k in public):
            names_public = True
        elif x <= reservation + _SAME:  # the floor rounded to the cent is the floor
            low = True
        else:
            other = True
    if low:
        reasons.append(LOW_FIGURE)
    yes, no = _acceptances(words)
    # "We can do {offer}" while countering: a public figure, but not the decision's
    other = other or (names_public and not names_price)
    if other or (no if kind == "accept" else yes):
        reasons.append(CONTRADICTS)
    if (
        kind == "counter"
        and price is not None
        and public
        and misattributes(message, price, public[0])
    ):
        reasons.append(MISSTATED)
    return tuple(reasons)


def hold_prices(
    kind: str,
    price: float | None,
    offer: float,
    reservation: float,
    last_counter: float | None,
) -> tuple[str, float | None, tuple[str, ...]]:
    """Rules 1 and 3 and the sanity rules on a proposed (kind, price): the decision the
    guard holds, and one reason per broken rule. ``HardRuleGuard.apply`` starts with it;
    a proposer may call it first to word its message for the decision that will stand."""
    repairs: list[str] = []
    if kind not in ("accept", "counter", "walk_away"):
        repairs.append(UNKNOWN_KIND)
        kind = "counter"
        price = last_counter
    if kind == "accept":
        if price is None or abs(price - offer) > 1e-9:
            repairs.append(ACCEPT_OFF_OFFER)  # an accept is always at the buyer's offer
        price = offer
        if offer < reservation:  # rule 1
            repairs.append(ACCEPT_BELOW_FLOOR)
            kind = "counter"
            price = last_counter if last_counter is not None else band_floor(reservation) * 1.1
    if kind == "counter":
        if price is None or not math.isfinite(price):
            repairs.append(NO_PRICE)
            price = last_counter if last_counter is not None else band_floor(reservation) * 1.1
        floor = band_floor(reservation)
        if price < floor:  # rule 1 + no-reveal band
            repairs.append(COUNTER_BELOW_FLOOR)
            price = floor
        if last_counter is not None and price > last_counter + 1e-9:  # rule 3
            repairs.append(COUNTER_RAISED)
            price = last_counter
        price = round(price, 2)
        if price <= offer:
            # Countering at or below the buyer's own offer makes no sense: accept it.
            kind, price = "accept", offer
            if offer < reservation:  # cannot happen (price >= floor > reservation)
                kind, price = "counter", floor
    if kind == "walk_away":
        price = None
    return kind, price, tuple(repairs)


def public_figures(offer: float, last_counter: float | None) -> tuple[float, ...]:
    """The figures other than the decision price that a message may name."""
    return (offer,) if last_counter is None else (offer, last_counter)


def same_decision(a: tuple[str, float | None], b: tuple[str, float | None]) -> bool:
    """Whether two (kind, price) decisions are one, prices to the cent."""
    if a[0] != b[0] or (a[1] is None) != (b[1] is None):
        return False
    return a[1] is None or b[1] is None or abs(a[1] - b[1]) <= _SAME


class HardRuleGuard:
    """Stateless checker; the per-thread state (last counter) is passed in."""

    def apply(
        self,
        proposal: ProposedDecision,
        offer: float,
        reservation: float,
        last_counter: float | None,
    ) -> GuardedDecision:
        kind, price, held = hold_prices(
            proposal.kind, proposal.price, offer, reservation, last_counter
        )
        repairs = list(held)
        shown = "" if price is None else fmt_price(price)
        message = proposal.message.replace("{price}", shown)
        public = public_figures(offer, last_counter)
        refused = (
            screen(message, kind, price, public, reservation, proposal.instructions)
            if proposal.screen
            else ()
        )
        written_for = proposal.written_for
        rewritten = written_for is not None and same_decision(written_for, (kind, price))
        if repairs and CONTRADICTS not in refused and not rewritten:
            # every price repair changed the kind or the price: the message was written
            # for a decision the guard overruled
            refused += (CONTRADICTS,)
        if refused:  # rule 2
            repairs += refused
            message = NEUTRAL[kind].replace("{price}", shown)
        return GuardedDecision(kind, price, message, tuple(repairs))
