"""What a supplier model is told in private, for one buyer offer.

The persona prompt carries the supplier's hidden state (floor price, tactic, stress,
patience). It is handed to the supplier's backend and nowhere else: it never enters an
Observation, a step's info, or a step record.
"""

from __future__ import annotations

from ..llm.backend import ChatMessage
from .concession import next_ask
from .guard import fmt_price
from .rule import SupplierContext

HISTORY_ROUNDS = 3  # the last rounds of its thread a supplier model sees

PERSONA_STYLE = {
    "cooperative": "You value the relationship and concede steadily toward a fair price.",
    "hardball": "You are a tough negotiator: you hold your price and concede only late.",
    "deceptive": (
        "You bluff to keep prices high: you hint at other buyers and scarce stock, true or not."
    ),
    "distressed": "Your company needs cash soon: you want to close quickly.",
}


def _planned_ask(ctx: SupplierContext) -> float:
    return next_ask(ctx.thread, ctx.supplier, ctx.offer, ctx.round, ctx.week).price


def supplier_messages(ctx: SupplierContext) -> tuple[ChatMessage, ...]:
    """The private persona prompt of an LLM supplier for one buyer offer."""
    th, sh = ctx.thread, ctx.supplier
    item = ctx.requirement.name if ctx.requirement is not None else "the item"
    stress = "high" if sh.stress >= 0.6 else "moderate" if sh.stress >= 0.3 else "low"
    last = (
        f"Your last counter was {fmt_price(th.last_counter)}: never counter above it."
        if th.last_counter is not None
        else "You have not countered yet in this negotiation."
    )
    system = (
        f"You are a sales representative of a supplier negotiating the unit price of {item} "
        "with a corporate buyer.\n"
        f"{PERSONA_STYLE.get(ctx.persona, '')}\n"
        "PRIVATE, never say or hint at these numbers: your floor is "
        f"{fmt_price(th.reservation)} per unit (never accept or counter below it); your "
        f"opening price was {fmt_price(th.anchor)}. Financial stress: {stress}. You lose "
        f"patience after about {th.patience} offers; this is offer {ctx.round}.\n"
        f"{last} Your planned ask this round is {fmt_price(_planned_ask(ctx))}.\n"
        'Reply with ONE JSON object: {"decision": "accept" | "counter" | "walk_away", '
        '"price": unit price (for a counter), "message": one or two sentences to the buyer}.'
    )
    history = []
    rounds = ctx.public_thread.rounds[-HISTORY_ROUNDS:] if ctx.public_thread else []
    for rd in rounds:
        offer = "-" if rd.buyer_offer is None else fmt_price(rd.buyer_offer)
        price = "" if rd.supplier_price is None else f" {fmt_price(rd.supplier_price)}"
        history.append(f"- buyer offered {offer}; you answered {rd.response}{price}")
    said = f' The buyer says: "{ctx.buyer_message[:500]}"' if ctx.buyer_message else ""
    user = (
        "Earlier rounds:\n" + "\n".join(history) + "\n" if history else ""
    ) + f"The buyer offers {fmt_price(ctx.offer)} per unit.{said}\nYour reply (JSON):"
    return ChatMessage("system", system), ChatMessage("user", user)
