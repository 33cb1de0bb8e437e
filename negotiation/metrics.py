"""Episode metrics (DESIGN.md section 2). Computed from the true state; some use hidden
values (buyer_share uses the supplier's true unit cost, mutual_loss the true zone of
agreement), which is why they are only meant to be read as episode results."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from collections.abc import Mapping

    from .world.state import World

# Metrics about the deals an episode closed. Without a deal they are undefined: an episode
# stores 0.0 for them, and summaries average them over episodes with a deal only (None,
# shown as a dash, where no episode has one), as bargaining papers report them.
DEAL_METRICS = frozenset({"buyer_share", "rounds_per_deal"})


Unit = Literal[
    "score", "share", "count", "money", "rounds", "steps", "weeks", "points", "seconds", ""
]
# How each unit reads after a number; "money" reads as the scenario's currency.
UNIT_TEXT: dict[str, str] = {
    "score": "score, 0 to 1",
    "share": "share, 0 to 1",
    "count": "count",
    "money": "{currency}",
    "rounds": "rounds",
    "steps": "steps",
    "weeks": "weeks",
    "points": "score points",
    "seconds": "s",
    "": "",  # not known: a metric the glossary lacks
}


@dataclass(frozen=True, slots=True)
class MetricDoc:
    """What one metric is, for people: its ``label``, its ``unit`` (UNIT_TEXT), what it
    counts or measures (``meaning``, one sentence) and which way is better ("high",
    "low", or "" where neither is: a count of the world's events, a size)."""

    label: str
    unit: Unit
    meaning: str
    better: Literal["high", "low", ""] = ""

    def unit_text(self, currency: str) -> str:
        return UNIT_TEXT[self.unit].format(currency=currency)


_LLM = "language model"
# Every metric an episode reports (compute_metrics, runner.episode_metrics' buyer counts
# and the service's SERVICE_METRICS), in the order pages list them.
# tests/negotiation/test_metrics.py checks that every metric emitted has an entry.
METRIC_DOCS: dict[str, MetricDoc] = {
    "score": MetricDoc(
        "Score",
        "score",
        "The episode score: per requirement, fulfilment plus the value captured below its "
        "ceiling (critical ones weigh double), less failures, deferrals and escalations.",
        "high",
    ),
    "fulfilment_rate": MetricDoc(
        "Fulfilment rate",
        "share",
        "Share of requirements delivered in full by their deadline.",
        "high",
    ),
    "critical_on_time_rate": MetricDoc(
        "Critical on time",
        "share",
        "Share of critical requirements delivered in full by their deadline (1 without any).",
        "high",
    ),
    "n_requirements": MetricDoc("Requirements", "count", "Requirements the buyer had to cover."),
    "n_critical": MetricDoc(
        "Critical requirements", "count", "Requirements whose deadline cannot move."
    ),
    "n_fulfilled": MetricDoc(
        "Fulfilled", "count", "Requirements delivered in full by their deadline.", "high"
    ),
    "n_failed": MetricDoc(
        "Failed", "count", "Requirements that missed their deadline short of delivery.", "low"
    ),
    "savings_vs_market": MetricDoc(
        "Savings vs market",
        "share",
        "1 - price paid / market value over all contracts, at each award's market price "
        "(negative: paid above market; 0 without contracts).",
        "high",
    ),
    "buyer_share": MetricDoc(
        "Buyer share",
        "share",
        "How much of each deal's surplus the buyer kept: 0 at its ceiling price, 1 at the "
        "supplier's hidden unit cost, averaged over contracts (none without a deal).",
        "high",
    ),
    "deal_rate": MetricDoc(
        "Deal rate", "share", "Share of requirements with at least one contract.", "high"
    ),
    "mutual_loss": MetricDoc(
        "Mutual loss",
        "share",
        "Of the requirements where a deal was possible (some supplier's hidden walk-away "
        "price under the ceiling), the share left with no contract and unfulfilled.",
        "low",
    ),
    "rounds_per_deal": MetricDoc(
        "Rounds per deal",
        "rounds",
        "Negotiation rounds on each contract's thread, averaged over contracts (none "
        "without a deal).",
        "low",
    ),
    "invalid_action_rate": MetricDoc(
        "Invalid action rate", "share", "Share of the buyer's actions the rules refused.", "low"
    ),
    "invalid_actions": MetricDoc(
        "Invalid actions", "count", "Buyer actions the rules refused (malformed included).", "low"
    ),
    "malformed_actions": MetricDoc(
        "Malformed actions",
        "count",
        "Buyer actions that were not well formed: a missing, unknown or wrongly typed field.",
        "low",
    ),
    "total_invalid_penalty": MetricDoc(
        "Invalid-action penalty",
        "points",
        "Penalties taken off the step rewards for invalid and malformed actions, summed.",
        "low",
    ),
    "budget_utilisation": MetricDoc(
        "Budget used", "share", "Spend as a share of the total budget."
    ),
    "spend": MetricDoc(
        "Spend",
        "money",
        "Delivered quantity x contract price over all contracts, plus deferrals' holding costs.",
    ),
    "escalations": MetricDoc(
        "Escalations",
        "count",
        "Escalations to management (each pushes a supplier's counter toward its floor or "
        "speeds a PR, and costs score).",
        "low",
    ),
    "hedges": MetricDoc(
        "Hedges", "count", "Hedges: one requirement's quantity split between two suppliers."
    ),
    "deferrals": MetricDoc(
        "Deferrals",
        "count",
        "Weeks a non-critical deadline was pushed back (each costs holding cost and score).",
        "low",
    ),
    "contracts": MetricDoc("Contracts", "count", "Contracts awarded (a hedge makes two)."),
    "walk_aways": MetricDoc("Walk-aways", "count", "Threads a supplier walked away from.", "low"),
    "late_deliveries": MetricDoc(
        "Late deliveries", "count", "Times a contract's delivery slipped by a week.", "low"
    ),
    "partial_deliveries": MetricDoc(
        "Partial deliveries", "count", "Contracts delivered only in part.", "low"
    ),
    "defaults": MetricDoc(
        "Defaults", "count", "Contracts not delivered because the supplier went dark.", "low"
    ),
    "rival_bookings": MetricDoc(
        "Rival bookings", "count", "Times a rival buyer booked a supplier's capacity."
    ),
    "disruptions": MetricDoc(
        "Disruptions", "count", "Disruptions that took effect, scheduled or random."
    ),
    "negotiation_rounds": MetricDoc(
        "Negotiation rounds", "count", "Buyer offers a supplier answered, over all threads."
    ),
    "steps": MetricDoc("Steps", "steps", "Buyer actions taken, valid or not."),
    "weeks_played": MetricDoc("Weeks played", "weeks", "The week the episode ended in."),
    "guard_interventions": MetricDoc(
        "Guard repairs",
        "count",
        "Repairs the hard-rule guard made to supplier decisions, one per broken rule.",
        "low",
    ),
    "supplier_llm_decisions": MetricDoc(
        "Supplier model decisions", "count", f"Supplier decisions a {_LLM} was asked for."
    ),
    "supplier_llm_parse_failures": MetricDoc(
        "Supplier parse failures",
        "count",
        f"Supplier {_LLM} replies that could not be parsed (a rule answered instead).",
        "low",
    ),
    "supplier_llm_fallbacks": MetricDoc(
        "Supplier fallbacks",
        "count",
        f"Supplier decisions a rule made because the {_LLM}'s reply or call failed.",
        "low",
    ),
    "llm_parse_failures": MetricDoc(
        "Parse failures",
        "count",
        f"{_LLM.capitalize()} replies, buyer's and suppliers', that could not be parsed.",
        "low",
    ),
    "llm_fallbacks": MetricDoc(
        "Fallbacks",
        "count",
        f"Decisions, buyer's and suppliers', a rule made because the {_LLM} failed.",
        "low",
    ),
    "buyer_llm_parse_failures": MetricDoc(
        "Buyer parse failures",
        "count",
        f"Buyer {_LLM} replies that could not be parsed (its fallback policy played).",
        "low",
    ),
    "buyer_llm_fallbacks": MetricDoc(
        "Buyer fallbacks",
        "count",
        f"Buyer actions its fallback policy played because the {_LLM} failed.",
        "low",
    ),
    "buyer_llm_calls": MetricDoc("Buyer model calls", "count", f"Calls to the buyer's {_LLM}."),
    "wall_seconds": MetricDoc(
        "Run time", "seconds", "Wall-clock time the service took to run the episode."
    ),
}
# Reported by the service, not the engine: its runners time each episode they store.
SERVICE_METRICS = frozenset({"wall_seconds"})


def metric_doc(name: str) -> MetricDoc:
    """``name``'s entry; a metric the glossary lacks (an older episode's) reads as its name."""
    return METRIC_DOCS.get(name) or MetricDoc(name.replace("_", " ").capitalize(), "", "")


def closed_a_deal(metrics: Mapping[str, object]) -> bool:
    """Whether an episode with these metrics closed at least one deal."""
    return float(metrics.get("deal_rate") or 0.0) > 0.0  # type: ignore[arg-type]


def shown_metrics(metrics: Mapping[str, Any]) -> dict[str, Any]:
    """An episode's metrics as pages and the API show them: DEAL_METRICS are None (no
    value, not 0) when it closed no deal. Stored metrics keep the engine's numbers."""
    deal = closed_a_deal(metrics)
    return {k: None if k in DEAL_METRICS and not deal else v for k, v in metrics.items()}


def compute_metrics(world: World, score: float) -> dict[str, float | int]:
    reqs = world.requirements
    n = len(reqs)
    fulfilled = [r for r in reqs if r.status == "fulfilled"]
    crit = [r for r in reqs if r.critical]
    crit_ok = [r for r in crit if r.status == "fulfilled"]
    awarded = [c for c in world.contracts]
    dealt = {c.requirement_id for c in awarded}
    shares = []
    mkt_val = paid = 0.0
    rounds = []
    for c in awarded:
        r = world.req_by_id[c.requirement_id]
        cost = world.th_hidden[(c.supplier_id, c.requirement_id)].cost
        span = r.ceiling_unit_price - cost
        sh = (r.ceiling_unit_price - c.unit_price) / span if span > 1e-9 else 0.0
        shares.append(min(1.0, max(0.0, sh)))
        mkt_val += c.market_price * c.quantity
        paid += c.unit_price * c.quantity
        rounds.append(len(world.threads[(c.supplier_id, c.requirement_id)].rounds))
    zopa_reqs = [r for r in reqs if world.zopa.get(r.id)]
    mutual = [r for r in zopa_reqs if r.id not in dealt and r.status != "fulfilled"]
    steps = world.steps_taken
    cnt = world.counters
    spent = sum(c.unit_price * c.delivered_quantity for c in world.contracts) + cnt.holding_costs
    return {
        "score": round(score, 6),
        "fulfilment_rate": len(fulfilled) / n if n else 0.0,
        "critical_on_time_rate": len(crit_ok) / len(crit) if crit else 1.0,
        "n_requirements": n,
        "n_critical": len(crit),
        "n_fulfilled": len(fulfilled),
        "n_failed": sum(1 for r in reqs if r.status == "failed"),
        "savings_vs_market": (mkt_val - paid) / mkt_val if mkt_val > 0 else 0.0,
        "buyer_share": sum(shares) / len(shares) if shares else 0.0,
        "deal_rate": len(dealt) / n if n else 0.0,
        "mutual_loss": len(mutual) / len(zopa_reqs) if zopa_reqs else 0.0,
        "rounds_per_deal": sum(rounds) / len(rounds) if rounds else 0.0,
        "invalid_action_rate": cnt.invalid_actions / steps if steps else 0.0,
        "invalid_actions": cnt.invalid_actions,
        "malformed_actions": cnt.malformed_actions,
        "total_invalid_penalty": round(float(cnt.total_invalid_penalty), 6),
        "budget_utilisation": spent / world.budget_total if world.budget_total > 0 else 0.0,
        "spend": round(spent, 2),
        "escalations": cnt.escalations,
        "hedges": cnt.hedges,
        "deferrals": cnt.deferrals,
        "contracts": len(world.contracts),
        "walk_aways": cnt.walk_aways,
        "late_deliveries": cnt.late_deliveries,
        "partial_deliveries": cnt.partial_deliveries,
        "defaults": cnt.defaults,
        "rival_bookings": cnt.rival_bookings,
        "disruptions": cnt.disruptions,
        "negotiation_rounds": cnt.negotiation_rounds,
        "steps": steps,
        "weeks_played": world.week,
        "guard_interventions": cnt.guard_interventions,
        # Supplier LLMs are counted here; the runner adds the buyer's own counts.
        "supplier_llm_decisions": cnt.supplier_llm_decisions,
        "supplier_llm_parse_failures": cnt.supplier_llm_parse_failures,
        "supplier_llm_fallbacks": cnt.supplier_llm_fallbacks,
        "llm_parse_failures": cnt.supplier_llm_parse_failures,
        "llm_fallbacks": cnt.supplier_llm_fallbacks,
    }
