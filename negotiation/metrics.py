"""Episode metrics (DESIGN.md section 2). Computed from the true state; some use hidden
values (buyer_share uses the supplier's true unit cost, mutual_loss the true zone of
agreement), which is why they are only meant to be read as episode results."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from collections.abc import Mapping

    from .world.state import World

# Metrics about the deals an episode closed. Without a deal they are undefined: an episode
# stores 0.0 for them, and summaries average them over episodes with a deal only (None,
# shown as a dash, where no episode has one), as bargaining papers report them.
DEAL_METRICS = frozenset({"buyer_share", "rounds_per_deal"})


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
