"""The episode score (one formula, in [0, 1]) and its running (potential) version.

Per requirement i with weight w_i (2 if critical, else 1):
    v(c)  = clip((ceiling_i - price_c) / (ceiling_i - 0.7 * reference_i), -1, 1)
            value captured per contract: the buyer's position between its ceiling and a
            public cost floor (70 % of the market reference price at creation)
    c_i   = FULFIL + VALUE * v_i                 if fulfilled (v_i: quantity-weighted over
                                                  delivered contracts)
          = 0.5 * f_i * (FULFIL + VALUE * v_i) - failure_cost * (1 - f_i)
                                                 if failed, f_i = fraction delivered by the
                                                  deadline (partial deliveries count half)
          = 0.5 * p_i * (FULFIL + VALUE * v_i)   while undecided, p_i = covered fraction
                                                  (delivered + pending) / quantity
    score = clip( sum_i w_i c_i / sum_i w_i
                  - deferral_cost * deferrals - escalation_cost * escalations, 0, 1)
At the end every requirement is decided, so the running score equals the final score.
Step reward = running(after) - running(before) - invalid penalty. The value floor uses only
public data, so rewards never leak a reservation.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .world.state import World

FULFIL = 0.6
VALUE = 0.4
FLOOR_REF = 0.7


@dataclass(slots=True)
class EpisodeScore:
    score: float
    metrics: dict[str, float | int]


def contract_value(ceiling: float, reference: float, price: float) -> float:
    span = ceiling - FLOOR_REF * reference
    if span <= 1e-9:
        return 0.0
    v = (ceiling - price) / span
    return -1.0 if v < -1.0 else 1.0 if v > 1.0 else v


def requirement_value(world: World, rid: str, delivered_only: bool) -> float:
    r = world.req_by_id[rid]
    num = den = 0.0
    for c in world.contracts_by_req[rid]:
        if delivered_only:
            q = c.delivered_quantity
        else:
            q = c.delivered_quantity if c.status != "pending" else c.quantity
        if q <= 0:
            continue
        num += q * contract_value(r.ceiling_unit_price, r.reference_price, c.unit_price)
        den += q
    return num / den if den > 0 else 0.0


def running_score(world: World) -> float:
    cfg = world.cfg
    total = 0.0
    wsum = 0.0
    for r in world.requirements:
        w = 2.0 if r.critical else 1.0
        wsum += w
        st = r.status
        if st == "fulfilled":
            c = FULFIL + VALUE * requirement_value(world, r.id, True)
        elif st == "failed":
            f = min(1.0, r.delivered / r.quantity)
            c = -cfg.failure_cost * (1.0 - f)
            if f > 0.0:
                c += 0.5 * f * (FULFIL + VALUE * requirement_value(world, r.id, True))
        else:
            covered = r.delivered + r.pending
            if covered <= 0:
                continue
            p = min(1.0, covered / r.quantity)
            c = 0.5 * p * (FULFIL + VALUE * requirement_value(world, r.id, False))
        total += w * c
    s = total / wsum if wsum > 0 else 0.0
    s -= (
        cfg.deferral_cost * world.counters.deferrals
        + cfg.escalation_cost * world.counters.escalations
    )
    return 0.0 if s < 0.0 else 1.0 if s > 1.0 else s
