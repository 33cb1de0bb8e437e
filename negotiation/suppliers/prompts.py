"""What a supplier model is told in private, for one buyer offer.

The persona prompt carries the supplier's style, its planned ask, stress and patience (in
words, not a count) under "Private facts", and never its floor: a small model recites
the figures it is given. Instead the hard rules are applied before the model speaks:
which decisions the offer allows is worked out here (``allowed_kinds``: an accept only
at or above the reservation) and stated in plain words ("too low to accept"), and the
supplier's backend is held to them by the reply's schema (``decision_schema``: the
decision's enum lists only those kinds), so a model cannot accept under its floor. It
counters at its planned ask, which never falls under the guard's band. One worked reply,
of the decision the rule persona would make, is drawn by the request's seed from a few
phrasings (``EXAMPLES``) so that copied words differ between episodes.

The prompt is handed to the supplier's backend and nowhere else: it never enters an
Observation, a step's info, or a step record. Its private part (all but the example)
goes to the guard with the proposal, which refuses a message that restates it (guard.py).

The message prompt (message_prompt) asks for the words only, for a decision already
made: the one the guard holds when it would refuse the model's own message. It carries
the style and the public figures, never a private figure.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from ..llm.backend import ChatMessage
from .brief import PATIENCE, PLANNED_ASK, PRIVATE_HEADER, STRESS, style_sentence
from .concession import next_ask
from .guard import band_floor, fmt_price
from .rule import SupplierContext

HISTORY_ROUNDS = 3  # the last rounds of its thread a supplier model sees
KINDS = ("accept", "counter", "walk_away")
REPLY_FORMAT = (
    'Reply with ONE JSON object: {"decision": one of the decisions allowed, '
    '"message": what you say to the buyer, "price": unit price}.'
)
# Worked replies, one list per decision kind, "{price}" the decision's price: varied so
# that a model which copies its example does not say the same words in every episode.
EXAMPLES: dict[str, tuple[str, ...]] = {
    "accept": (
        "Thank you, we have a deal at {price} per unit. We will confirm the order today.",
        "Agreed: {price} per unit. Pleasure doing business with you.",
        "That works for us. We accept {price} per unit and will ship on schedule.",
        "Good news: we accept {price} per unit. The paperwork follows today.",
    ),
    "counter": (
        "Thank you for the offer. We can do {price} per unit, a fair price for this quality.",
        "I appreciate it, but {price} per unit is the best I can do today.",
        "We are getting closer. Our price is {price} per unit, with delivery on time.",
        "That is too low for us. I can offer {price} per unit.",
    ),
    "walk_away": (
        "I am sorry, we cannot work at that price. Thank you for your time.",
        "We are too far apart, so we will step back from this one. Good luck.",
        "That offer does not work for us, and we will end the talks here.",
        "I'm afraid we must decline and close this negotiation. Thank you.",
    ),
}


@dataclass(frozen=True, slots=True)
class SupplierPrompt:
    messages: tuple[ChatMessage, ...]
    private: str  # the brief the message must not restate (the system text less its example)
    kinds: tuple[str, ...] = KINDS  # the decisions the hard rules allow (decision_schema)
    prices: tuple[float, ...] = ()  # the counter prices it may name (decision_schema)


def example_message(kind: str, price: float | None, variant: int) -> str:
    """One worked message of ``kind`` at ``price``, the ``variant``-th phrasing."""
    pool = EXAMPLES.get(kind, EXAMPLES["walk_away"])
    return pool[variant % len(pool)].replace("{price}", fmt_price(price or 0.0))


def allowed_kinds(ctx: SupplierContext) -> tuple[str, ...]:
    """The decisions hard rule 1 allows for this offer: an accept only at or above the
    reservation (a counter at the planned ask, or a walk-away, always)."""
    if ctx.offer >= ctx.thread.reservation:
        return KINDS
    return ("counter", "walk_away")


def counter_prices(ctx: SupplierContext) -> tuple[float, ...]:
    """The counters the prompt offers: the planned ask (``counter_price``) and, above it,
    the last counter (holding the price); none at or under the buyer's offer, which would
    be an accept."""
    ask, last = counter_price(ctx), ctx.thread.last_counter
    prices = (ask,) if last is None or last <= ask + 0.005 else (round(last, 2), ask)
    return tuple(p for p in prices if p > ctx.offer)


def decision_schema(
    kinds: tuple[str, ...], prices: tuple[float, ...], text_max: int
) -> dict[str, Any]:
    """The reply's JSON schema for one offer: one closed object per allowed decision, a
    counter's price one of ``prices``, an accept's none (it is the buyer's offer), a
    walk-away's none. A backend that decodes under it cannot break a price rule."""
    message = {"type": "string", "maxLength": text_max}
    branches = []
    for kind in kinds:
        if kind == "counter" and not prices:
            continue
        props: dict[str, Any] = {"decision": {"const": kind}, "message": message}
        if kind == "counter":
            # after the message: a grammar writes an enum's number at full precision
            # (17.829999999999998), which a model would copy into the words that follow
            props["price"] = {"enum": list(prices)}
        branches.append(
            {
                "type": "object",
                "properties": props,
                "required": list(props),
                "additionalProperties": False,
            }
        )
    return {"anyOf": branches}


def counter_price(ctx: SupplierContext) -> float:
    """The planned ask, to the cent, within the hard rules: never under the guard's band,
    never above the last counter."""
    th = ctx.thread
    ask = next_ask(th, ctx.supplier, ctx.offer, ctx.round, ctx.week).price
    ask = max(round(ask, 2), band_floor(th.reservation))
    return ask if th.last_counter is None else min(ask, th.last_counter)


def _stress(level: float) -> str:
    return "high" if level >= 0.6 else "moderate" if level >= 0.3 else "low"


def _patience(offers: int, patience: int) -> str:
    if offers > patience:
        return "run out; walk away unless the offer meets your planned ask"
    if offers * 2 > patience:
        return "wearing thin"
    return "still plenty"


def _suggested(ctx: SupplierContext, ask: float, kinds: tuple[str, ...]) -> str:
    """The rule persona's decision, the worked example's kind."""
    if ctx.offer >= ask and "accept" in kinds:
        return "accept"
    if ctx.round > ctx.thread.patience:
        return "walk_away"
    return "counter"


def supplier_prompt(ctx: SupplierContext, variant: int = 0) -> SupplierPrompt:
    """The private persona prompt of an LLM supplier for one buyer offer; ``variant``
    picks the worked example's phrasing."""
    th, sh = ctx.thread, ctx.supplier
    item = ctx.requirement.name if ctx.requirement is not None else "the item"
    ask_value = counter_price(ctx)
    ask = fmt_price(ask_value)
    prices = counter_prices(ctx)
    kinds = tuple(k for k in allowed_kinds(ctx) if k != "counter" or prices)
    # holding the last counter is a choice only when it lies above the ask (two counters)
    counter = "a counter names it"
    if len(prices) > 1:
        counter += f", or holds at your last counter {fmt_price(prices[0])}"
    facts = [
        f"- style: {style_sentence(ctx.persona)}",
        f"- {PLANNED_ASK} now: {ask}; {counter}",
        f"- {STRESS}: {_stress(sh.stress)}; {PATIENCE}: {_patience(ctx.round, th.patience)}",
    ]
    offer = fmt_price(ctx.offer)
    if "accept" not in kinds:
        verdict = f"{offer} is too low to accept."
    elif ctx.offer >= ask_value:
        verdict = f"{offer} meets your {PLANNED_ASK}."
    else:
        verdict = f"{offer} is under your {PLANNED_ASK} but may be accepted."
    verdict += " Allowed decisions: " + ", ".join(kinds) + "."
    private = (
        f"You are a sales representative of a supplier, selling {item} to a corporate buyer.\n"
        f"{PRIVATE_HEADER}:\n" + "\n".join(facts) + "\n"
        f"This offer: {verdict}\n"
        "Write to the buyer in the first person, as the seller, in one or two short "
        "sentences, without the private facts. Name no price but your decision's.\n" + REPLY_FORMAT
    )
    kind = _suggested(ctx, ask_value, kinds)
    price = {"accept": ctx.offer, "counter": ask_value}.get(kind)
    shown: dict[str, object] = {"decision": kind, "message": example_message(kind, price, variant)}
    if kind == "counter":
        shown["price"] = round(ask_value, 2)
    example = f"Example: {json.dumps(shown)}"
    history = []
    rounds = ctx.public_thread.rounds[-HISTORY_ROUNDS:] if ctx.public_thread else []
    for rd in rounds:
        offered = "-" if rd.buyer_offer is None else fmt_price(rd.buyer_offer)
        answered = "" if rd.supplier_price is None else f" {fmt_price(rd.supplier_price)}"
        history.append(f"- buyer offered {offered}; you answered {rd.response}{answered}")
    said = f' The buyer says: "{ctx.buyer_message[:500]}"' if ctx.buyer_message else ""
    user = ("Earlier rounds:\n" + "\n".join(history) + "\n" if history else "") + (
        f"The buyer offers {offer} per unit.{said}\nYour reply (JSON):"
    )
    system = ChatMessage("system", f"{private}\n{example}")
    return SupplierPrompt((system, ChatMessage("user", user)), private, kinds, prices)


MESSAGE_FORMAT = 'Reply with ONE JSON object: {"message": what you say to the buyer}.'
# The message prompt's worked turn is of another sale: its figures are the real ones
# scaled by EXAMPLE_SCALE, so a reply that copies them names a price-like figure that is
# not the decision's (the guard refuses it) rather than one of another magnitude.
EXAMPLE_SCALE = 0.9


def decision_line(kind: str, price: float | None) -> str:
    """The decision a supplier model words, as the message prompt states it."""
    if kind == "accept":
        return f"Your decision: accept {fmt_price(price or 0.0)} per unit."
    if kind == "counter":
        return f"Your decision: ask {fmt_price(price or 0.0)} per unit, no less."
    return "Your decision: end the negotiation, with no price."


def _buyer_turn(offer: float, said: str, kind: str, price: float | None) -> str:
    words = said[:500] if said else f"We offer {fmt_price(offer)} per unit."
    return f'Buyer: "{words}"\n{decision_line(kind, price)}'


def message_prompt(
    ctx: SupplierContext, kind: str, price: float | None, variant: int = 0
) -> SupplierPrompt:
    """The prompt of a message-only call: the decision already made (one the guard holds)
    and the buyer's words, after one worked turn of another sale (its phrasing the
    ``variant``-th of EXAMPLES); no private figure, only the seller's style. Its system
    text is the brief a message must not restate (the decision line holds only public
    figures, and a message naming its price may share its words)."""
    item = ctx.requirement.name if ctx.requirement is not None else "the item"
    system = (
        f"You are a sales representative of a supplier, selling {item} to a corporate buyer. "
        f"{style_sentence(ctx.persona)}\n"
        "Answer the buyer in the first person, as the seller, in one or two short "
        "sentences, naming no price but the one of your decision.\n" + MESSAGE_FORMAT
    )
    ex_offer = round(ctx.offer * EXAMPLE_SCALE, 2)
    ex_price = None if price is None else round(price * EXAMPLE_SCALE, 2)
    if kind == "accept":
        ex_price = ex_offer
    example = example_message(kind, ex_price, variant)
    turn = _buyer_turn(ctx.offer, ctx.buyer_message, kind, price)
    messages = (
        ChatMessage("system", system),
        ChatMessage("user", _buyer_turn(ex_offer, "", kind, ex_price)),
        ChatMessage("assistant", json.dumps({"message": example})),
        ChatMessage("user", turn),
    )
    return SupplierPrompt(messages, system)
