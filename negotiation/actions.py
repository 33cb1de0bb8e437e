"""The seven buyer actions: fast hand-written validation and their effects.

Every check runs before any mutation, so an invalid action changes nothing but its slot.
Schema problems (not an object, unknown type/field, wrong type, NaN/inf, out-of-range
numbers) raise ActionError(malformed=True); failed preconditions raise
ActionError(malformed=False). The two carry different penalties (see config).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from .suppliers.concession import pressure
from .suppliers.field import FIELD_ACTOR
from .suppliers.guard import HardRuleGuard, ProposedDecision, band_floor
from .suppliers.rule import RULE_POLICY, SupplierContext, SupplierPolicy
from .suppliers.tells import make_tells
from .world.entities import Contract, PurchaseRequisition, Requirement, Round, Supplier, Thread
from .world.records import FrozenDict, committed_spend, pr_cover, pr_room, pr_shortfall

if TYPE_CHECKING:
    from .env import ProcurementEnv

ACTION_TYPES: tuple[str, ...] = (
    "negotiate",
    "award_contract",
    "raise_pr",
    "defer",
    "reject",
    "hedge",
    "escalate",
)

# action_type -> (required fields, optional fields). "rationale" is allowed everywhere so
# an agent can record why (shown to analysts); it has no effect on the world.
FIELDS: dict[str, tuple[frozenset[str], frozenset[str]]] = {
    "negotiate": (frozenset({"supplier_id", "requirement_id", "price"}), frozenset({"message"})),
    "award_contract": (
        frozenset({"supplier_id", "requirement_id", "quantity"}),
        frozenset({"price"}),
    ),
    "raise_pr": (frozenset({"requirement_id", "amount"}), frozenset()),
    "defer": (frozenset(), frozenset({"requirement_id"})),
    "reject": (frozenset({"supplier_id"}), frozenset({"requirement_id"})),
    "hedge": (
        frozenset({"requirement_id", "supplier_id", "hedge_supplier_id", "split"}),
        frozenset(),
    ),
    "escalate": (frozenset({"requirement_id"}), frozenset({"supplier_id"})),
}
# Fields that the service running an episode adds, never a buyer: a person's answer to an
# escalation when the scenario asks for one (see _refused_by).
SERVICE_FIELDS: dict[str, frozenset[str]] = {"escalate": frozenset({"approval"})}
_COMMON = frozenset({"action_type", "rationale"})
ALLOWED = {
    k: req | opt | _COMMON | SERVICE_FIELDS.get(k, frozenset()) for k, (req, opt) in FIELDS.items()
}

MAX_MESSAGE = 2000
MAX_QUANTITY = 10**9
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
    v = float(v)
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


def _supplier(env: ProcurementEnv, sid: str) -> Supplier:
    s = env.sup_by_id.get(sid)
    if s is None:
        raise ActionError("unknown_supplier", f"There is no supplier '{sid[:40]}'.")
    return s


def _requirement(env: ProcurementEnv, rid: str) -> Requirement:
    r = env.req_by_id.get(rid)
    if r is None:
        raise ActionError("unknown_requirement", f"There is no requirement '{rid[:40]}'.")
    return r


def _open_requirement(env: ProcurementEnv, rid: str) -> Requirement:
    r = _requirement(env, rid)
    if r.decided:
        raise ActionError("requirement_closed", f"Requirement {r.id} is already {r.status}.")
    return r


def execute_action(env: ProcurementEnv, a: Any) -> tuple[dict | None, bool]:
    """Validate and apply one action. Returns (public supplier response or None, closes_week)."""
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
    return _HANDLERS[at](env, a)


# ----------------------------------------------------------------------------- negotiate
def _negotiate(env: ProcurementEnv, a: dict) -> tuple[dict | None, bool]:
    sid = _str(a, "supplier_id")
    rid = _str(a, "requirement_id")
    price = _num(a, "price")
    msg = _str(a, "message", required=False) or ""
    if len(msg) > MAX_MESSAGE:
        raise ActionError(
            "message_too_long", "Field 'message' is longer than 2000 characters.", True
        )
    sup = _supplier(env, sid)
    r = _open_requirement(env, rid)
    if price <= 0.0:
        raise ActionError("out_of_range", "Field 'price' must be positive.", True)
    if price > ABSURD_PRICE_FACTOR * r.reference_price:
        raise ActionError("out_of_range", "Field 'price' is absurdly high for this item.", True)
    if sup.rejected:
        raise ActionError("supplier_rejected", f"You rejected {sup.id}; threads cannot reopen.")
    if not sup.active:
        raise ActionError("supplier_inactive", f"{sup.id} is not responding at the moment.")
    if r.id not in sup.list_prices:
        raise ActionError("category_mismatch", f"{sup.id} does not supply {r.category}.")
    th = env.threads.get((sid, rid))
    if th is not None:
        if th.status == "agreed":
            raise ActionError(
                "thread_agreed",
                f"{sup.id} already agreed on {r.id}; the agreement binds until it expires. "
                "Award it.",
            )
        if th.status != "open":
            raise ActionError("thread_closed", f"The thread {sid}/{rid} is {th.status}.")
    else:
        th = env.open_thread(sid, r)
    policy = env.supplier_policies.get(env.hidden[sid].persona, RULE_POLICY)
    return respond(env, th, r, price, msg, policy), False


def respond(
    env: ProcurementEnv,
    th: Thread,
    r: Requirement,
    offer: float,
    buyer_message: str,
    policy: SupplierPolicy,
) -> dict:
    """One supplier response to a buyer offer, passed through the hard-rule guard."""
    key = (th.supplier_id, th.requirement_id)
    hid = env.th_hidden[key]
    sh = env.hidden[th.supplier_id]
    th.offers += 1
    ctx = SupplierContext(
        sh.persona, offer, th.offers, hid, sh, env.week, buyer_message, env.rng, r, th
    )
    proposal = policy.respond(ctx)
    if proposal.actor != "rule":  # an LLM, its fallback, or a field negotiator answered
        env.step_supplier_actor = proposal.actor
        if not proposal.actor.startswith(FIELD_ACTOR):
            _count_llm_supplier(env, proposal)
    prev = hid.last_counter
    d = GUARD.apply(proposal, offer, hid.reservation, prev)
    if d.interventions:
        env.counters["guard_interventions"] += d.interventions
    return _apply_decision(env, th, r, offer, d.kind, d.price, d.message, prev)


def _count_llm_supplier(env: ProcurementEnv, proposal: ProposedDecision) -> None:
    """Per-episode counts of LLM supplier decisions and their fallbacks (never silent)."""
    c = env.counters
    c["supplier_llm_decisions"] += 1
    if proposal.failure is not None:
        c["supplier_llm_fallbacks"] += 1
        c["supplier_llm_parse_failures"] += int(proposal.failure == "parse")


def _apply_decision(
    env: ProcurementEnv,
    th: Thread,
    r: Requirement,
    offer: float | None,
    kind: str,
    price: float | None,
    message: str,
    prev: float | None,
    response_label: str | None = None,
) -> dict:
    key = (th.supplier_id, th.requirement_id)
    hid = env.th_hidden[key]
    sh = env.hidden[th.supplier_id]
    week = env.week
    valid_until = week + env.cfg.quote_validity_weeks
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
        env.counters["walk_aways"] += 1
    env.counters["negotiation_rounds"] += 1
    concession = 0.0
    if kind == "counter" and prev is not None and price is not None:
        concession = max(0.0, (prev - price) / hid.anchor)
    elif kind == "counter" and price is not None:
        concession = max(0.0, (hid.anchor - price) / hid.anchor)
    cat = r.category
    init = env.true_cap_initial[th.supplier_id].get(cat, 1) or 1
    scarcity = 1.0 - max(0, sh.true_capacity.get(cat, 0)) / init
    tells = make_tells(
        env.rng,
        sh.persona,
        env.style[th.supplier_id],
        min(1.0, th.offers / hid.patience),
        sh.stress,
        concession,
        scarcity,
        min(1.0, (sh.rival_push - 1.0) * 4.0),
        kind == "counter" and prev is not None and price == prev,
        env.cfg.deception_level,
        env.cfg.tell_noise,
        pressure(sh, week),
    )
    label = response_label or kind
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
    env: ProcurementEnv, sid: str, r: Requirement, qty: int
) -> tuple[Supplier, Thread, float]:
    sup = _supplier(env, sid)
    if sup.rejected:
        raise ActionError("supplier_rejected", f"You rejected {sup.id}.")
    if not sup.active:
        raise ActionError("supplier_inactive", f"{sup.id} is not responding at the moment.")
    th = env.threads.get((sid, r.id))
    if th is None:
        raise ActionError("no_agreement", f"There is no negotiation with {sid} on {r.id} yet.")
    price = th.awardable_price(env.week)
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


def _check_pr_cover(env: ProcurementEnv, r: Requirement, cost: float) -> None:
    """Once the requirement's spend with this award exceeds the PR threshold, its approved
    PRs together must cover all of it (records.py); raises when they do not."""
    spent = committed_spend(env.contracts_by_req[r.id], r.id)
    cover = pr_cover(env.prs, r.id)
    short = pr_shortfall(spent, cost, cover, env.cfg.pr_threshold)
    if short > 1e-6:
        earlier = f", {spent:,.2f} of it already contracted," if spent > 0 else ""
        raise ActionError(
            "pr_required",
            f"Cost {cost:,.2f} needs approved purchase requisitions for {r.id} covering it: "
            f"{r.id}'s spend would be {spent + cost:,.2f}{earlier} over the PR threshold "
            f"{env.cfg.pr_threshold:,.2f}, and its approved PRs cover {cover:,.2f} "
            f"({short:,.2f} short).",
        )


def _make_contract(
    env: ProcurementEnv,
    sup: Supplier,
    th: Thread,
    r: Requirement,
    qty: int,
    price: float,
    hedge: bool,
) -> Contract:
    c = Contract(
        f"C{len(env.contracts) + 1:03d}",
        sup.id,
        r.id,
        qty,
        price,
        env.week,
        env.week + sup.lead_time_weeks,
        r.reference_price * env.market.index[r.category],
        hedge,
    )
    env.contracts.append(c)
    env.contracts_by_req[r.id].append(c)
    sh = env.hidden[sup.id]
    true_left = sh.true_capacity.get(r.category, 0)
    env.contract_cap[c.id] = max(0, min(qty, true_left))
    sh.true_capacity[r.category] = true_left - qty
    sup.capacity[r.category] = sup.capacity.get(r.category, 0) - qty
    sup.touch()
    env.budget_committed += qty * price
    r.pending += qty
    if r.quantity_needed == 0:
        r.status = "contracted"
    th.status = "awarded"
    th.counter_price = None
    th.counter_valid_until = None
    env.mark_dirty()
    return c


def _award(env: ProcurementEnv, a: dict) -> tuple[dict | None, bool]:
    sid = _str(a, "supplier_id")
    rid = _str(a, "requirement_id")
    qty = _qty(a, "quantity")
    named = None
    if a.get("price") is not None:
        named = _num(a, "price")
    r = _open_requirement(env, rid)
    sup, th, price = _award_checks(env, sid, r, qty)
    if named is not None and abs(named - price) > max(0.005, 1e-6 * price):
        # Rule 4: awards happen at the agreed price, never at a price the buyer names.
        raise ActionError(
            "price_mismatch",
            f"The agreed price with {sid} on {rid} is {price:,.2f}; awards use the agreed price.",
        )
    _charge(env, r, qty * price)
    c = _make_contract(env, sup, th, r, qty, price, False)
    env.emit(
        "award",
        f"{c.id}: {qty} x {r.name} from {sup.id} at {price:,.2f}, due week {c.due_week}.",
    )
    return None, False


def _charge(env: ProcurementEnv, r: Requirement, cost: float) -> None:
    """Budget and PR checks shared by award and hedge."""
    if cost > env.budget_remaining + 1e-6:
        raise ActionError(
            "budget_exceeded",
            f"Cost {cost:,.2f} exceeds the remaining budget {env.budget_remaining:,.2f}.",
        )
    _check_pr_cover(env, r, cost)


def _hedge(env: ProcurementEnv, a: dict) -> tuple[dict | None, bool]:
    rid = _str(a, "requirement_id")
    sid = _str(a, "supplier_id")
    hid = _str(a, "hedge_supplier_id")
    split = _num(a, "split")
    if not 0.0 < split < 1.0:
        raise ActionError("out_of_range", "Field 'split' must be strictly between 0 and 1.", True)
    r = _open_requirement(env, rid)
    if sid == hid:
        raise ActionError("same_supplier", "A hedge needs two different suppliers.")
    need = r.quantity_needed
    q1 = round(need * split)
    q2 = need - q1
    if q1 < 1 or q2 < 1:
        raise ActionError(
            "split_too_small", f"Splitting {need} units at {split:.2f} leaves a part empty."
        )
    s1, t1, p1 = _award_checks(env, sid, r, q1)
    s2, t2, p2 = _award_checks(env, hid, r, q2)
    _charge(env, r, q1 * p1 + q2 * p2)
    c1 = _make_contract(env, s1, t1, r, q1, p1, True)
    c2 = _make_contract(env, s2, t2, r, q2, p2, True)
    env.counters["hedges"] += 1
    env.emit(
        "hedge",
        f"{r.id} hedged: {c1.id} {q1} from {s1.id} at {p1:,.2f}; "
        f"{c2.id} {q2} from {s2.id} at {p2:,.2f}.",
    )
    return None, False


# ----------------------------------------------------------------------------- PRs, defer
def _raise_pr(env: ProcurementEnv, a: dict) -> tuple[dict | None, bool]:
    rid = _str(a, "requirement_id")
    amount = _num(a, "amount")
    if amount <= 0.0:
        raise ActionError("out_of_range", "Field 'amount' must be positive.", True)
    r = _open_requirement(env, rid)
    if amount > env.budget_remaining + 1e-6:
        raise ActionError(
            "budget_exceeded", f"PR amount {amount:,.2f} exceeds the remaining budget."
        )
    room = pr_room(env.cfg.pr_guardrail, r, env.prs)
    if amount > room + 1e-6:
        raise ActionError(
            "amount_exceeds_guardrail",
            f"PR amount exceeds the {max(0.0, room):,.2f} {rid} may still ask: its PRs "
            f"together ask at most {env.cfg.pr_guardrail}x ceiling x quantity.",
        )
    if sum(1 for p in env.prs if p.requirement_id == rid and p.status == "pending") >= 2:
        raise ActionError("too_many_prs", f"{rid} already has two pending PRs.")
    pr = PurchaseRequisition(
        f"PR{len(env.prs) + 1:02d}", rid, amount, env.week, env.week + env.cfg.pr_lead_weeks
    )
    env.prs.append(pr)
    env.counters["prs_raised"] += 1
    env.emit(
        "pr_raised",
        f"{pr.id} raised for {rid}: {amount:,.2f}, decision after week {pr.matures_week}.",
    )
    return None, False


def _defer(env: ProcurementEnv, a: dict) -> tuple[dict | None, bool]:
    rid = _str(a, "requirement_id", required=False)
    if rid is not None:
        r = _open_requirement(env, rid)
        if r.critical:
            raise ActionError("critical_deadline", f"{rid} is critical; its deadline cannot move.")
        if r.deferrals_used >= env.cfg.max_deferrals:
            raise ActionError("no_deferrals_left", f"{rid} has used all its deferrals.")
        if r.deadline_week >= env.cfg.weeks - 1:
            raise ActionError("deadline_at_horizon", f"{rid} is already due in the last week.")
        hold = env.cfg.holding_cost_rate * r.ceiling_unit_price * r.quantity
        if hold > env.budget_remaining + 1e-6:
            raise ActionError("budget_exceeded", "The holding cost exceeds the remaining budget.")
        r.deadline_week += 1
        r.deferrals_used += 1
        env.budget_committed += hold
        env.counters["deferrals"] += 1
        env.counters["holding_costs"] += hold
        env.mark_dirty()
        env.emit(
            "deferral",
            f"{rid} deadline moved to week {r.deadline_week} (holding cost {hold:,.2f}).",
        )
    return None, True


# ----------------------------------------------------------------------------- reject, escalate
def _reject(env: ProcurementEnv, a: dict) -> tuple[dict | None, bool]:
    sid = _str(a, "supplier_id")
    rid = _str(a, "requirement_id", required=False)
    sup = _supplier(env, sid)
    if sup.rejected:
        raise ActionError("already_rejected", f"{sid} is already rejected.")
    if rid is not None:
        r = _requirement(env, rid)
        th = env.threads.get((sid, rid))
        if th is None:
            if r.id not in sup.list_prices:
                raise ActionError("category_mismatch", f"{sid} does not supply {r.category}.")
            if r.decided:
                raise ActionError("requirement_closed", f"Requirement {rid} is already {r.status}.")
            th = env.open_thread(sid, r)
        elif th.status not in ("open", "agreed"):
            raise ActionError("thread_closed", f"The thread {sid}/{rid} is {th.status}.")
        th.status = "rejected"
        th.counter_price = None
        th.counter_valid_until = None
        env.emit("reject", f"Buyer declined {sid} for {rid}.")
    else:
        sup.rejected = True
        for (s, _), th in env.threads.items():
            if s == sid and th.status in ("open", "agreed"):
                th.status = "rejected"
                th.counter_price = None
                th.counter_valid_until = None
        env.emit("reject", f"Buyer stopped working with {sid}.")
    env.counters["rejections"] += 1
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


def _escalate(env: ProcurementEnv, a: dict) -> tuple[dict | None, bool]:
    rid = _str(a, "requirement_id")
    sid = _str(a, "supplier_id", required=False)
    r = _open_requirement(env, rid)
    if env.escalations_left <= 0:
        raise ActionError("no_escalations_left", "No escalations left in this episode.")
    approver = _refused_by(a.get("approval"))
    if approver is not None:  # a person said no: nothing happens, nothing is spent
        env.emit("escalation_refused", f"{approver} refused the escalation on {rid}.")
        return None, False
    pending = [p for p in env.prs if p.requirement_id == rid and p.status == "pending"]
    if pending and sid is None:
        pr = pending[0]
        if pr.amount > env.budget_remaining + 1e-6:
            raise ActionError("budget_exceeded", f"{pr.id} no longer fits the remaining budget.")
        pr.status = "approved"
        env.escalations_left -= 1
        env.counters["escalations"] += 1
        env.mark_dirty()
        env.emit("escalation", f"Management approved {pr.id} for {rid} ahead of schedule.")
        return None, False
    if sid is None:
        raise ActionError(
            "nothing_to_escalate", f"No pending PR for {rid}; name a supplier to escalate a thread."
        )
    sup = _supplier(env, sid)
    th = env.threads.get((sid, rid))
    if th is None or th.status != "open" or th.counter_price is None:
        raise ActionError(
            "nothing_to_escalate", f"No open thread with a standing counter from {sid} on {rid}."
        )
    if not sup.active or sup.rejected:
        raise ActionError("supplier_inactive", f"{sid} cannot be reached.")
    hid = env.th_hidden[(sid, rid)]
    prev = hid.last_counter
    cur = th.counter_price
    target = cur - env.cfg.escalation_fraction * (cur - hid.reservation)
    proposal = ProposedDecision(
        "counter",
        max(target, band_floor(hid.reservation)),
        "After a call between our managers, we can revise to {price}.",
    )
    d = GUARD.apply(proposal, 0.0, hid.reservation, prev)
    if d.interventions:
        env.counters["guard_interventions"] += d.interventions
    env.escalations_left -= 1
    env.counters["escalations"] += 1
    env.mark_dirty()
    resp = _apply_decision(env, th, r, None, "counter", d.price, d.message, prev, "escalation")
    env.emit("escalation", f"Management call with {sid} on {rid}.")
    return resp, False


_HANDLERS = {
    "negotiate": _negotiate,
    "award_contract": _award,
    "raise_pr": _raise_pr,
    "defer": _defer,
    "reject": _reject,
    "hedge": _hedge,
    "escalate": _escalate,
}
