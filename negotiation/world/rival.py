"""The rival buyer: books real supplier capacity and pushes reservations and list prices up.

Each week, with probability = aggression, it books 25-60% of a supplier's remaining true
capacity in one category (more attractive = cheaper suppliers are targeted more often);
with probability aggression^2 it books a second one. Booked units are gone for everyone
(true and claimed capacity both drop). The supplier's reservation for threads opened later
rises by 3-8% (scaled by aggression). The buyer sees a market hint; the supplier is named
only sometimes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .state import World


def rival_acts(world: World, w: int) -> None:
    a = world.cfg.rival_aggression
    if a <= 0.0:
        return
    rng = world.rng
    n = 0
    if rng.random() < a:
        n = 2 if rng.random() < a * a else 1
    for _ in range(n):
        options = []
        weights = []
        for sup in world.suppliers:
            if not sup.active:
                continue
            h = world.hidden[sup.id]
            for cat in sup.categories:
                if h.true_capacity.get(cat, 0) > 0:
                    options.append((sup, cat))
                    weights.append(1.0 / h.list_factor)
        if not options:
            return
        sup, cat = rng.choices(options, weights=weights)[0]
        h = world.hidden[sup.id]
        left = h.true_capacity[cat]
        booked = max(1, int(left * rng.uniform(0.25, 0.6)))
        h.true_capacity[cat] = left - booked
        sup.capacity[cat] = max(0, sup.capacity.get(cat, 0) - int(booked * h.capacity_claim_factor))
        sup.touch()
        h.rival_push *= 1.0 + rng.uniform(0.03, 0.08) * (0.5 + a)
        world.counters.rival_bookings += 1
        who = f" from {sup.name} ({sup.id})" if rng.random() < 0.6 else ""
        world.emit("rival", f"Market news: a rival buyer booked a large {cat} allocation{who}.")
