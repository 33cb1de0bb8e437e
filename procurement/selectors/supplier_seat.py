"""What the supplier seat's page reads: the seated supplier's side of its episode only.

The payload is built field by field from what a supplier would know: the buyer's offers
to it and the words that came with them, its own answers, the awards and rejections
that name it, and its own private facts (cost, floor, capacity, its brief's style) for
the offer it is asked about. Nothing of the buyer's side is read into it: no budget, no
state, no reasons (a decision's ``rationale``), no events, no other supplier. A test
holds the page, this payload and the stream to that.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from negotiation.suppliers.seat import HUMAN_ACTOR, TIMEOUT_ACTOR
from procurement.models import Episode

# A turn's fields the person is shown (the buyer's stored action and record stay out).
TURN_FIELDS = (
    "step",
    "week",
    "requirement_id",
    "item",
    "quantity",
    "round",
    "offer",
    "buyer_message",
    "private",
)
ANSWERED_BY = {HUMAN_ACTOR: "you", TIMEOUT_ACTOR: "rule supplier (timed out)"}


def _turn(seat: dict[str, Any]) -> dict[str, Any] | None:
    turn = seat.get("turn")
    if turn is None:
        return None
    shown = {k: turn[k] for k in TURN_FIELDS}
    asked = datetime.fromisoformat(turn["asked_at"])
    shown["asked_at"] = turn["asked_at"]
    shown["deadline"] = (asked + timedelta(seconds=seat["idle_seconds"])).isoformat()
    return shown


def _row(step: int, week: int, action: Any, response: Any, actor: Any, sid: str) -> dict | None:
    """One line of the seat's thread, or None when the step does not concern it (an
    award's price is the thread's standing one: the seat page fills it in)."""
    action = action if isinstance(action, dict) else {}
    kind = action.get("action_type")
    if isinstance(response, dict) and response.get("supplier_id") == sid:
        return {
            "step": step,
            "week": week,
            "kind": "offer" if kind == "negotiate" else str(kind),
            "requirement_id": response.get("requirement_id"),
            "offer": action.get("price"),
            "buyer_message": action.get("message") or "",
            "answer": response.get("response"),
            "price": response.get("price"),
            "message": response.get("message") or "",
            "by": ANSWERED_BY.get(actor, "rule supplier"),
        }
    named = (action.get("supplier_id"), action.get("hedge_supplier_id"))
    if sid in named and kind in ("award_contract", "hedge", "reject"):
        return {
            "step": step,
            "week": week,
            "kind": kind,
            "requirement_id": action.get("requirement_id"),
            "quantity": action.get("quantity"),
        }
    return None


def seat_view(episode: Episode) -> dict[str, Any]:
    """The seat page's state: the episode's public facts, the offer waiting for an answer
    (with the supplier's private facts), the hand-over, and the seated supplier's thread."""
    seat = episode.supplier_seat or {}
    sid = seat.get("supplier_id", "")
    rows = episode.decisions.filter(valid=True).order_by("step")
    fields = ("step", "week", "action", "response", "supplier_actor")
    thread = [r for v in rows.values_list(*fields) if (r := _row(*v, sid=sid)) is not None]
    standing: dict[Any, Any] = {}  # requirement -> the last price agreed or asked
    for r in thread:
        if r["kind"] == "award_contract":
            r["price"] = standing.get(r["requirement_id"])
        elif r.get("price") is not None:
            standing[r["requirement_id"]] = r["price"]
    return {
        "episode": {
            "id": episode.pk,
            "status": episode.status,
            "scenario": episode.scenario_name,
            "buyer": episode.policy_name,
            "steps": episode.steps,
            "terminal": episode.is_terminal,
            "seed": episode.shown_seed,
        },
        "supplier_id": sid,
        "idle_seconds": seat.get("idle_seconds"),
        "turn": _turn(seat),
        # the facts of the offer waiting, else of the last one answered
        "private": (seat.get("turn") or {}).get("private") or seat.get("facts"),
        "handed_over": seat.get("handed_over"),
        "thread": thread,
    }
