"""The seven buyer actions: fast hand-written validation and their effects.

Every check runs before any mutation, so an invalid action changes nothing but its slot.
Schema problems (not an object, unknown type/field, wrong type, NaN/inf, out-of-range
numbers) raise ActionError(malformed=True); failed preconditions raise
ActionError(malformed=False). The two carry different penalties (see config).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .action_spec import ACTION_TYPES, ACTIONS, MAX_MESSAGE, MAX_QUANTITY, RATIONALE
from .suppliers.concession import pressure
from .suppliers.field import FIELD_ACTOR
from .suppliers.guard import GuardedDecision, HardRuleGuard, ProposedDecision, band_floor
from .suppliers.rule import RULE_POLICY, SupplierContext, SupplierPolicy
from .suppliers.seat import SEAT_ACTORS
from .suppliers.tells import TellSignals, make_tells
from .world.entities import Contract, PurchaseRequisition, Requirement, Round, Supplier, Thread
from .world.records import (
    FrozenDict,
    RequirementRecord,
    committed_spend,
    pr_cover,
    pr_room,
    pr_shortfall,
)
from .world.seeding import side_uniform

if TYPE_CHECKING:
    from .action_mask import PublicWorld
    from .world.state import World

# action_type -> (required fields, optional fields), from the one declaration.
FIELDS: dict[str, tuple[frozenset[str], frozenset[str]]] = {
    a.action_type: (frozenset(a.required), frozenset(a.optional)) for a in ACTIONS
}
# Fields that the service running an episode adds, never a buyer: a person's answer to an
# escalation when the scenario asks for one (see _refused_by).
SERVICE_FIELDS: dict[str, frozenset[str]] = {"escalate": frozenset({"approval"})}
_COMMON = frozenset({"action_type", RATIONALE})
ALLOWED = {
    k: req | opt | _COMMON | SERVICE_FIELDS.get(k, frozenset()) for k, (req, opt) in FIELDS.items()
}

ABSURD_PRICE_FACTOR = 100.0  # prices above 100x the market reference are rejected as absurd

GUARD = HardRuleGuard()


class ActionError(Exception):
    __slots__ = ("code", "malformed", "message")

    def __init__(self, code: str, message: str, malformed: bool = False) -> None:
        self.code = code
        self.message = message
        self.malformed = malformed


# ----------------------------------------------------------------------------- field parsing
def _str(a: dict, key: str, required: bool = True) -> str | None:
    v = a.get(key)
    if v is None:
        if required:
            raise ActionError("missing_field", f"Field '{key}' is required.", True)
        return None
    if type(v) is not str:
        raise ActionError("wrong_type", f"Field '{key}' must be a string.", True)
    return v


def _num(a: dict, key: str) -> float:
    if key not in a or a[key] is None:
        raise ActionError("missing_field", f"Field '{key}' is required.", True)
    v = a[key]
    t = type(v)
    if t is not float and t is not int:
        raise ActionError("wrong_type", f"Field '{key}' must be a number.", True)
    try:
        v = float(v)
    except OverflowError:  # an int of hundreds of digits
        v = math.inf
    if not math.isfinite(v):
        raise ActionError("invalid_number", f"Field '{key}' must be a finite number.", True)
    return v


def _qty(a: dict, key: str) -> int:
    v = _num(a, key)
    if v != int(v):
        raise ActionError("wrong_type", f"Field '{key}' must be a whole number of units.", True)
    q = int(v)
    if q <= 0:
        raise ActionError("out_of_range", f"Field '{key}' must be at least 1.", True)
    if q > MAX_QUANTITY:
        raise ActionError("out_of_range", f"Field '{key}' is absurdly large.", True)
    return q


def _supplier(world: World, sid: str) -> Supplier:
    s = world.sup_by_id.get(sid)
    if s is None:
        raise ActionError("unknown_supplier", f"There is no supplier '{sid[:40]}'.")
    return s


def _requirement(world: World, rid: str) -> Requirement:
    r = world.req_by_id.get(rid)
    if r is None:
        raise ActionError("unknown_requirement", f"There is no requirement '{rid[:40]}'.")
    return r


def _open_requirement(world: World, rid: str) -> Requirement:
    r = _requirement(world, rid)
    if r.decided:
        raise ActionError("requirement_closed", f"Requirement {r.id} is already {r.status}.")
    return r


def _checked_type(a: Any) -> str:
    """The checks every action passes first: an object, a known type, allowed fields, a
    well-formed rationale. Returns its action_type."""
    if type(a) is not dict:
        raise ActionError("not_an_object", "An action must be a JSON object.", True)
    at = a.get("action_type")
    if at is None:
        raise ActionError("missing_field", "Field 'action_type' is required.", True)
    if type(at) is not str or at not in ALLOWED:
        raise ActionError(
            "unknown_action_type",
            f"Unknown action_type; use one of {', '.join(ACTION_TYPES)}.",
            True,
        )
    allowed = ALLOWED[at]
    for k in a:
        if k not in allowed:
            key = k if type(k) is str else repr(k)
            raise ActionError("unknown_field", f"Field '{key[:40]}' is not allowed for {at}.", True)
    rat = a.get("rationale")
    if rat is not None and (type(rat) is not str or len(rat) > MAX_MESSAGE):
        raise ActionError("wrong_type", "Field 'rationale' must be a string (max 2000).", True)
    return at


def execute_action(world: World, a: Any) -> tuple[dict | None, bool]:
    """Validate and apply one action. Returns (public supplier response or None, closes_week)."""
    return _HANDLERS[_checked_type(a)](world, a)


def check_action(world: World | PublicWorld, a: Any) -> None:
    """Raise the ActionError ``execute_action`` would raise for ``a``, changing nothing.
    Runs on the world or on the public state an Observation shows (``PublicWorld``): every
    precondition reads public state only."""
    _CHECKS[_checked_type(a)](world, a)


# ----------------------------------------------------------------------------- negotiate
def check_negotiate(world: World, a: dict) -> tuple[Supplier, Requirement, float, str]:
    """Negotiate's preconditions: (supplier, requirement, price, message) or ActionError."""
    sid = _str(a, "supplier_id")
    rid = _str(a, "requirement_id")
    price = _num(a, "price")
    msg = _str(a, "message", required=False) or ""
    if len(msg) > MAX_MESSAGE:
        raise ActionError(
            "message_too_long", "Field 'message' is longer than 2000 characters.", True
        )
    sup = _supplier(world, sid)
    r = _open_requirement(world, rid)
    if price <= 0.0:
        raise ActionError("out_of_range", "Field 'price' must be positive.", True)
    if price > max_offer_price(r):
        raise ActionError("out_of_range", "Field 'price' is absurdly high for this item.", True)
    if sup.rejected:
        raise ActionError("supplier_rejected", f"You rejected {sup.id}; threads cannot reopen.")
    if not sup.active:
        raise ActionError("supplier_inactive", f"{sup.id} is not responding at the moment.")
    if r.id not in sup.list_prices:
        raise ActionError("category_mismatch", f"{sup.id} does not supply {r.category}.")
    th = world.threads.get((sid, rid))
    if th is not None:
        if th.status == "agreed":
            raise ActionError(
                "thread_agreed",
                f"{sup.id} already agreed on {r.id}; the agreement binds until it expires. "
                "Award it.",
            )
        if th.status != "open":
            raise ActionError("thread_closed", f"The thread {sid}/{rid} is {th.status}.")
    return sup, r, price, msg


def max_offer_price(r: Requirement | RequirementRecord) -> float:
    """The highest unit price a buyer may offer for r: above it an offer is absurd."""
    return ABSURD_PRICE_FACTOR * r.reference_price


def _negotiate(world: World, a: dict) -> tuple[dict | None, bool]:
    sup, r, price, msg = check_negotiate(world, a)
    th = world.threads.get((sup.id, r.id))
    if th is None:
        th = world.open_thread(sup.id, r)
    policies = world.supplier_policies
    # a supplier seat (suppliers/seat.py) is keyed by its supplier's id, personas by name
    policy = policies.get(sup.id) or policies.get(world.hidden[sup.id].persona, RULE_POLICY)
    return respond(world, th, r, price, msg, policy), False


def respond(
    world: World,
    th: Thread,
    r: Requirement,
    offer: float,
    buyer_message: str,
    policy: SupplierPolicy,
) -> dict:
    """One supplier response to a buyer offer, passed through the hard-rule guard."""
    key = (th.supplier_id, th.requirement_id)
    hid = world.th_hidden[key]
    sh = world.hidden[th.supplier_id]
    th.offers += 1
    ctx = SupplierContext(
        sh.persona,
        offer,
        th.offers,
        hid,
        sh,
        world.week,
        buyer_message,
        world.rng,
        r,
        th,
        world.steps_taken,
    )
    proposal = policy.respond(ctx)
    if proposal.actor != "rule":  # an LLM, its fallback, or a field negotiator answered
        world.step_supplier_actor = proposal.actor
        if not proposal.actor.startswith(FIELD_ACTOR) and proposal.actor not in SEAT_ACTORS:
            _count_llm_supplier(world, proposal)
    prev = hid.last_counter
    d = GUARD.apply(proposal, offer, hid.reservation, prev)
    _count_repairs(world, d)
    return _apply_decision(world, SupplierReply(th, r, offer, d, prev))


def _count_repairs(world: World, d: GuardedDecision) -> None:
    """The guard's repairs of this step's supplier decision: one count each in
    ``guard_interventions``, their reasons kept for the step's record."""
    if d.repairs:
        world.counters.guard_interventions += len(d.repairs)
        world.step_guard_repairs.extend(d.repairs)


def _count_llm_supplier(world: World, proposal: ProposedDecision) -> None:
    """Per-episode counts of LLM supplier decisions and their fallbacks (never silent)."""
    c = world.counters
    c.supplier_llm_decisions += 1
    if proposal.failure is not None:
        c.supplier_llm_fallbacks += 1
        c.supplier_llm_parse_failures += int(proposal.failure == "parse")


@dataclass(slots=True, frozen=True)
class SupplierReply:
    """One guarded supplier answer, to be recorded on its thread."""

    thread: Thread
    requirement: Requirement
    offer: float | None  # the buyer's offer; None for an escalation
    decision: GuardedDecision
    prev: float | None  # the supplier's standing counter before this answer
    label: str | None = None  # the round's response when it is not the decision's kind


def _apply_decision(world: World, reply: SupplierReply) -> dict:
    th, r, offer, prev = reply.thread, reply.requirement, reply.offer, reply.prev
    d = reply.decision
    kind, price, message = d.kind, d.price, d.message
    key = (th.supplier_id, th.requirement_id)
    hid = world.th_hidden[key]
    sh = world.hidden[th.supplier_id]
    week = world.week
    valid_until = week + world.cfg.quote_validity_weeks
    if kind == "accept":
        th.status = "agreed"
        th.agreed_price = price
        th.valid_until_week = valid_until
        th.counter_price = None
        th.counter_valid_until = None
    elif kind == "counter":
        th.counter_price = price
        th.counter_valid_until = valid_until
        hid.last_counter = price
    else:
        th.status = "walked_away"
        th.counter_price = None
        th.counter_valid_until = None
        world.counters.walk_aways += 1
    world.counters.negotiation_rounds += 1
    concession = 0.0
    if kind == "counter" and prev is not None and price is not None:
        concession = max(0.0, (prev - price) / hid.anchor)
    elif kind == "counter" and price is not None:
        concession = max(0.0, (hid.anchor - price) / hid.anchor)
    cat = r.category
    init = world.true_cap_initial[th.supplier_id].get(cat, 1) or 1
    scarcity = 1.0 - max(0, sh.true_capacity.get(cat, 0)) / init
    signals = TellSignals(
        sh.persona,
        world.style[th.supplier_id],
        min(1.0, th.offers / hid.patience),
        sh.stress,
        concession,
        scarcity,
        min(1.0, (sh.rival_push - 1.0) * 4.0),
        kind == "counter" and prev is not None and price == prev,
        pressure(sh, week),
    )
    cfg = world.cfg
    tells = make_tells(world.rng, signals, deception=cfg.deception_level, noise=cfg.tell_noise)
    label = reply.label or kind
    rnd = Round(len(th.rounds) + 1, week, offer, label, price, message, FrozenDict(tells))
    th.add_round(rnd)
    return {
        "supplier_id": th.supplier_id,
        "requirement_id": th.requirement_id,
        "response": kind,
        "price": price,
        "message": message,
        "tells": tells,
    }


# ----------------------------------------------------------------------------- awards
def _award_checks(
    world: World, sid: str, r: Requirement, qty: int
) -> tuple[Supplier, Thread, float]:
    sup = _supplier(world, sid)
    if sup.rejected:
        raise ActionError("supplier_rejected", f"You rejected {sup.id}.")
    if not sup.active:
        raise ActionError("supplier_inactive", f"{sup.id} is not responding at the moment.")
    th = world.threads.get((sid, r.id))
    if th is None:
        raise ActionError("no_agreement", f"There is no negotiation with {sid} on {r.id} yet.")
    price = th.awardable_price(world.week)
    if price is None:
        if th.status in ("agreed", "open") and (th.agreed_price or th.counter_price):
            raise ActionError("agreement_expired", f"The quote from {sid} on {r.id} has expired.")
        raise ActionError(
            "no_agreement",
            f"No agreed price or standing counter from {sid} on {r.id} (thread {th.status}).",
        )
    need = r.quantity_needed
    if qty > need:
        raise ActionError(
            "quantity_exceeds_need", f"{r.id} needs {need} more units; you asked for {qty}."
        )
    if qty > sup.capacity.get(r.category, 0):
        raise ActionError(
            "capacity_exceeded",
            f"{sup.id} cannot commit {qty} units of {r.category} "
            f"(has {sup.capacity.get(r.category, 0)}).",
        )
    return sup, th, price


def _check_pr_cover(world: World, r: Requirement, cost: float) -> None:
    """Once the requirement's spend with this award exceeds the PR threshold, its approved
    PRs together must cover all of it (records.py); raises when they do not."""
    spent = committed_spend(world.contracts_by_req[r.id], r.id)
    cover = pr_cover(world.prs, r.id)
    short = pr_shortfall(spent, cost, cover, world.cfg.pr_threshold)
    if short > 1e-6:
        earlier = f", {spent:,.2f} of it already contracted," if spent > 0 else ""
        raise ActionError(
            "pr_required",
            f"Cost {cost:,.2f} needs approved purchase requisitions for {r.id} covering it: "
            f"{r.id}'s spend would be {spent + cost:,.2f}{earlier} over the PR threshold "
            f"{world.cfg.pr_threshold:,.2f}, and its approved PRs cover {cover:,.2f} "
            f"({short:,.2f} short).",
        )


def _make_contract(
    world: World,
    sup: Supplier,
    th: Thread,
    r: Requirement,
    qty: int,
    price: float,
    hedge: bool,
) -> Contract:
    c = Contract(
        f"C{len(world.contracts) + 1:03d}",
        sup.id,
        r.id,
        qty,
        price,
        world.week,
        world.week + sup.lead_time_weeks,
        r.reference_price * world.market.index[r.category],
        hedge,
    )
    world.contracts.append(c)
    world.contracts_by_req[r.id].append(c)
    sh = world.hidden[sup.id]
    true_left = sh.true_capacity.get(r.category, 0)
    world.contract_cap[c.id] = max(0, min(qty, true_left))
    sh.true_capacity[r.category] = true_left - qty
    sup.capacity[r.category] = sup.capacity.get(r.category, 0) - qty
    sup.touch()
    world.budget_committed += qty * price
    r.pending += qty
    if r.quantity_needed == 0:
        r.status = "contracted"
    th.status = "awarded"
    th.counter_price = None
    th.counter_valid_until = None
    world.mark_dirty()
    return c


def check_award(world: World, a: dict) -> tuple[Supplier, Thread, Requirement, int, float]:
    """award_contract's preconditions: (supplier, thread, requirement, quantity, price)."""
    sid = _str(a, "supplier_id")
    rid = _str(a, "requirement_id")
    qty = _qty(a, "quantity")
    named = None
    if a.get("price") is not None:
        named = _num(a, "price")
    r = _open_requirement(world, rid)
    sup, th, price = _award_checks(world, sid, r, qty)
    if named is not None and abs(named - price) > max(0.005, 1e-6 * price):
        # Rule 4: awards happen at the agreed price, never at a price the buyer names.
        raise ActionError(
            "price_mismatch",
            f"The agreed price with {sid} on {rid} is {price:,.2f}; awards use the agreed price.",
        )
    _check_cost(world, r, qty * price)
    return sup, th, r, qty, price


def _award(world: World, a: dict) -> tuple[dict | None, bool]:
    sup, th, r, qty, price = check_award(world, a)
    c = _make_contract(world, sup, th, r, qty, price, False)
    world.emit(
        "award",
        f"{c.id}: {qty} x {r.name} from {sup.id} at {price:,.2f}, due week {c.due_week}.",
    )
    return None, False


def _check_cost(world: World, r: Requirement, cost: float) -> None:
    """Budget and PR checks shared by award and hedge."""
    if cost > world.budget_remaining + 1e-6:
        raise ActionError(
            "budget_exceeded",
            f"Cost {cost:,.2f} exceeds the remaining budget {world.budget_remaining:,.2f}.",
        )
    _check_pr_cover(world, r, cost)


_Part = tuple[Supplier, Thread, int, float]  # one side of a hedge: supplier, thread, qty, price


def check_hedge(world: World, a: dict) -> tuple[Requirement, _Part, _Part]:
    """hedge's preconditions: (requirement, first part, second part)."""
    rid = _str(a, "requirement_id")
    sid = _str(a, "supplier_id")
    hid = _str(a, "hedge_supplier_id")
    split = _num(a, "split")
    if not 0.0 < split < 1.0:
        raise ActionError("out_of_range", "Field 'split' must be strictly between 0 and 1.", True)
    r = _open_requirement(world, rid)
    if sid == hid:
        raise ActionError("same_supplier", "A hedge needs two different suppliers.")
    need = r.quantity_needed
    q1 = round(need * split)
    q2 = need - q1
    if q1 < 1 or q2 < 1:
        raise ActionError(
            "split_too_small", f"Splitting {need} units at {split:.2f} leaves a part empty."
        )
    s1, t1, p1 = _award_checks(world, sid, r, q1)
    s2, t2, p2 = _award_checks(world, hid, r, q2)
    _check_cost(world, r, q1 * p1 + q2 * p2)
    return r, (s1, t1, q1, p1), (s2, t2, q2, p2)


def _hedge(world: World, a: dict) -> tuple[dict | None, bool]:
    r, (s1, t1, q1, p1), (s2, t2, q2, p2) = check_hedge(world, a)
    c1 = _make_contract(world, s1, t1, r, q1, p1, True)
    c2 = _make_contract(world, s2, t2, r, q2, p2, True)
    world.counters.hedges += 1
    world.emit(
        "hedge",
        f"{r.id} hedged: {c1.id} {q1} from {s1.id} at {p1:,.2f}; "
        f"{c2.id} {q2} from {s2.id} at {p2:,.2f}.",
    )
    return None, False


# ----------------------------------------------------------------------------- PRs, defer
def check_raise_pr(world: World, a: dict) -> tuple[Requirement, float]:
    """raise_pr's preconditions: (requirement, amount)."""
    rid = _str(a, "requirement_id")
    amount = _num(a, "amount")
    if amount <= 0.0:
        raise ActionError("out_of_range", "Field 'amount' must be positive.", True)
    r = _open_requirement(world, rid)
    if amount > world.budget_remaining + 1e-6:
        raise ActionError(
            "budget_exceeded", f"PR amount {amount:,.2f} exceeds the remaining budget."
        )
    room = pr_room(world.cfg.pr_guardrail, r, world.prs)
    if amount > room + 1e-6:
        raise ActionError(
            "amount_exceeds_guardrail",
            f"PR amount exceeds the {max(0.0, room):,.2f} {rid} may still ask: its PRs "
            f"together ask at most {world.cfg.pr_guardrail}x ceiling x quantity.",
        )
    if sum(1 for p in world.prs if p.requirement_id == rid and p.status == "pending") >= 2:
        raise ActionError("too_many_prs", f"{rid} already has two pending PRs.")
    return r, amount


def _raise_pr(world: World, a: dict) -> tuple[dict | None, bool]:
    r, amount = check_raise_pr(world, a)
    rid = r.id
    pr = PurchaseRequisition(
        f"PR{len(world.prs) + 1:02d}", rid, amount, world.week, world.week + world.cfg.pr_lead_weeks
    )
    world.prs.append(pr)
    world.counters.prs_raised += 1
    world.emit(
        "pr_raised",
        f"{pr.id} raised for {rid}: {amount:,.2f}, decision after week {pr.matures_week}.",
    )
    return None, False


def check_defer(world: World, a: dict) -> tuple[Requirement | None, float]:
    """defer's preconditions: (requirement whose deadline moves or None, holding cost)."""
    rid = _str(a, "requirement_id", required=False)
    if rid is None:
        return None, 0.0
    r = _open_requirement(world, rid)
    if r.critical:
        raise ActionError("critical_deadline", f"{rid} is critical; its deadline cannot move.")
    if r.deferrals_used >= world.cfg.max_deferrals:
        raise ActionError("no_deferrals_left", f"{rid} has used all its deferrals.")
    if r.deadline_week >= world.cfg.weeks - 1:
        raise ActionError("deadline_at_horizon", f"{rid} is already due in the last week.")
    hold = world.cfg.holding_cost_rate * r.ceiling_unit_price * r.quantity
    if hold > world.budget_remaining + 1e-6:
        raise ActionError("budget_exceeded", "The holding cost exceeds the remaining budget.")
    return r, hold


def _defer(world: World, a: dict) -> tuple[dict | None, bool]:
    r, hold = check_defer(world, a)
    if r is not None:
        r.deadline_week += 1
        r.deferrals_used += 1
        world.budget_committed += hold
        world.counters.deferrals += 1
        world.counters.holding_costs += hold
        world.mark_dirty()
        world.emit(
            "deferral",
            f"{r.id} deadline moved to week {r.deadline_week} (holding cost {hold:,.2f}).",
        )
    return None, True


# ----------------------------------------------------------------------------- reject, escalate
def check_reject(world: World, a: dict) -> tuple[Supplier, Requirement | None, Thread | None]:
    """reject's preconditions: (supplier, requirement or None, its thread if one exists)."""
    sid = _str(a, "supplier_id")
    rid = _str(a, "requirement_id", required=False)
    sup = _supplier(world, sid)
    if sup.rejected:
        raise ActionError("already_rejected", f"{sid} is already rejected.")
    if rid is None:
        return sup, None, None
    r = _requirement(world, rid)
    th = world.threads.get((sid, rid))
    if th is None:
        if r.id not in sup.list_prices:
            raise ActionError("category_mismatch", f"{sid} does not supply {r.category}.")
        if r.decided:
            raise ActionError("requirement_closed", f"Requirement {rid} is already {r.status}.")
    elif th.status not in ("open", "agreed"):
        raise ActionError("thread_closed", f"The thread {sid}/{rid} is {th.status}.")
    return sup, r, th


def _reject(world: World, a: dict) -> tuple[dict | None, bool]:
    sup, r, th = check_reject(world, a)
    sid = sup.id
    if r is not None:
        if th is None:
            th = world.open_thread(sid, r)
        th.status = "rejected"
        th.counter_price = None
        th.counter_valid_until = None
        world.emit("reject", f"Buyer declined {sid} for {r.id}.")
    else:
        sup.rejected = True
        for (s, _), t in world.threads.items():
            if s == sid and t.status in ("open", "agreed"):
                t.status = "rejected"
                t.counter_price = None
                t.counter_valid_until = None
        world.emit("reject", f"Buyer stopped working with {sid}.")
    world.counters.rejections += 1
    return None, False


APPROVAL_DECISIONS = ("approved", "refused", "timed_out")


def _refused_by(approval: object) -> str | None:
    """Who refused, when an escalation carries a refusal; None to go ahead (approved, or
    timed out: the scenario's rule, management, answers)."""
    if approval is None:
        return None
    if (
        not isinstance(approval, dict)
        or approval.get("decision") not in APPROVAL_DECISIONS
        or not isinstance(approval.get("by", ""), str)
    ):
        raise ActionError(
            "wrong_type",
            'Field \'approval\' must be {"decision": approved|refused|timed_out, "by": name}.',
            True,
        )
    return (approval.get("by") or "The approver") if approval["decision"] == "refused" else None


@dataclass(slots=True, frozen=True)
class EscalationPlan:
    """What an escalation that passed its checks does: a person's refusal (nothing
    happens), management approving a pending PR, or a management call on a thread."""

    requirement: Requirement
    refused_by: str | None = None
    pr: PurchaseRequisition | None = None
    supplier: Supplier | None = None
    thread: Thread | None = None


def check_escalate(world: World, a: dict) -> EscalationPlan:
    """escalate's preconditions, and which of its three outcomes applies."""
    rid = _str(a, "requirement_id")
    sid = _str(a, "supplier_id", required=False)
    r = _open_requirement(world, rid)
    if world.escalations_left <= 0:
        raise ActionError("no_escalations_left", "No escalations left in this episode.")
    approver = _refused_by(a.get("approval"))
    if approver is not None:
        return EscalationPlan(r, refused_by=approver)
    pending = [p for p in world.prs if p.requirement_id == rid and p.status == "pending"]
    if pending and sid is None:
        pr = pending[0]
        if pr.amount > world.budget_remaining + 1e-6:
            raise ActionError("budget_exceeded", f"{pr.id} no longer fits the remaining budget.")
        return EscalationPlan(r, pr=pr)
    if sid is None:
        raise ActionError(
            "nothing_to_escalate", f"No pending PR for {rid}; name a supplier to escalate a thread."
        )
    sup = _supplier(world, sid)
    th = world.threads.get((sid, rid))
    if th is None or th.status != "open" or th.counter_price is None:
        raise ActionError(
            "nothing_to_escalate", f"No open thread with a standing counter from {sid} on {rid}."
        )
    if not sup.active or sup.rejected:
        raise ActionError("supplier_inactive", f"{sid} cannot be reached.")
    return EscalationPlan(r, supplier=sup, thread=th)


def escalation_fraction(world: World, sid: str, rid: str) -> float:
    """How far this management call moves the standing counter toward the reservation:
    a hidden fraction, uniform in the scenario's published ``escalation_range``, drawn
    for this thread at this step from the world's root, outside its generator (seeding.py:
    no other draw of the episode moves, and a sealed world keys it too). A fixed fraction
    would let one answer be solved for the reservation, and one per thread two answers;
    a fresh draw per call leaves the reservation uncertain by the range every time."""
    low, high = world.cfg.escalation_range
    return low + (high - low) * side_uniform(world.root, "escalation", sid, rid, world.steps_taken)


def _escalate(world: World, a: dict) -> tuple[dict | None, bool]:
    plan = check_escalate(world, a)
    r, rid = plan.requirement, plan.requirement.id
    if plan.refused_by is not None:  # a person said no: nothing happens, nothing is spent
        world.emit("escalation_refused", f"{plan.refused_by} refused the escalation on {rid}.")
        return None, False
    if plan.pr is not None:
        plan.pr.status = "approved"
        world.escalations_left -= 1
        world.counters.escalations += 1
        world.mark_dirty()
        world.emit("escalation", f"Management approved {plan.pr.id} for {rid} ahead of schedule.")
        return None, False
    th, sid = plan.thread, plan.supplier.id
    hid = world.th_hidden[(sid, rid)]
    prev = hid.last_counter
    cur = th.counter_price
    target = cur - escalation_fraction(world, sid, rid) * (cur - hid.reservation)
    proposal = ProposedDecision(
        "counter",
        max(target, band_floor(hid.reservation)),
        "After a call between our managers, we can revise to {price}.",
    )
    d = GUARD.apply(proposal, 0.0, hid.reservation, prev)
    _count_repairs(world, d)
    world.escalations_left -= 1
    world.counters.escalations += 1
    world.mark_dirty()
    resp = _apply_decision(world, SupplierReply(th, r, None, d, prev, "escalation"))
    world.emit("escalation", f"Management call with {sid} on {rid}.")
    return resp, False


_CHECKS = {
    "negotiate": check_negotiate,
    "award_contract": check_award,
    "raise_pr": check_raise_pr,
    "defer": check_defer,
    "reject": check_reject,
    "hedge": check_hedge,
    "escalate": check_escalate,
}
_HANDLERS = {
    "negotiate": _negotiate,
    "award_contract": _award,
    "raise_pr": _raise_pr,
    "defer": _defer,
    "reject": _reject,
    "hedge": _hedge,
    "escalate": _escalate,
}
