"""Where the held-out targets conflict: the expert's choice at a stalled ask, swept.

Issue 35 asks the expert to lose no deal against held-out sellers and to match every
script's mean surplus (failed deals count 0) on each family. At a seller's first stall,
a fixed-price seller (suppliers/heldout.py: one price from its first counter, walks at
the ``patience``-th offer under it, patience 2-5) and a random-walk one (``erratic``: each
answer keeps its ask with chance 0.4, never walks before the round limit) can show the
buyer the same thread: one counter under the list price, then the same counter again
after the buyer raised. Neither answers the buyer's offers, so nothing the buyer offers
before then tells them apart, and no probe is cheap: against a fixed price with patience
2 the next offer under the counter is a walk. One rule must then take both counters or
hold out on both. expert/safe.py takes a stalled ask that never moved at once when it
lies within ONE_PRICE_SHARE of the way from the highest floor any persona can have to
the list price (where a fixed price can lie), and holds out above it.

This bench sweeps ONE_PRICE_SHARE (a measurement: the expert's module constant is set
in each worker, nothing else changes) and prints, per value, the expert's surplus and
lost share on ``erratic`` and ``fixed_price``, beside the scripts' (which do not depend
on it), and how many erratic seeds met such a stall and were taken at once. A fixed-price
deal pays the fixed price whoever closes it, so a buyer that loses none of them is at
the family's ceiling (the lowball script's figure); any share that costs one falls below.

A last row plays the expert that holds out wherever it can: safe.py never moves
(``at_risk`` is off, so no stall is taken at once) and over_cap.py's near-cap offer at
the seller's patience is withdrawn after an answer that repeated its counter. It is the
most the erratic family can get from these two choices, and it plays every held-out
family, to show what that costs the sellers that walk.

With ``--field`` it also asks whether the field's AgentK and HardHeaded sellers take an
offer at the buyer's ceiling at all within their horizon (a probe buyer offering the
ceiling every round, and one offering 70 % of it until the seller's patience, then the
ceiling; either awards any counter at or under the ceiling): the issue calls a deal
possible where the seller's floor is under the ceiling, which holds on every seed there.

Usage: .venv/bin/python bench/pause_frontier.py [--seeds 300] [--seed-start 0]
       [--shares 0,0.3,0.4,0.5] [--procs 2] [--field]
"""

from __future__ import annotations

import argparse
import math
import sys
from collections import defaultdict
from multiprocessing import Pool
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

import quality  # bench/quality.py: one episode with the bare engine loop

from negotiation import ProcurementEnv, load_scenario
from negotiation.policies.expert import over_cap, safe

FAMILIES = ("erratic", "fixed_price")
REFERENCES = ("script_concede_2pct", "script_lowball_award")
HOLD = "expert_hold"  # the expert that holds out wherever it can (see the module)
_FIRST_STALL: list[bool] = []  # per episode: whether the first never-moved stall was taken
_move = safe.move


def _recording_move(fit, counter, last, cap, cost):
    sm = _move(fit, counter, last, cap, cost)
    if fit.moved == 0.0 and not _FIRST_STALL:
        _FIRST_STALL.append(sm.award)
    return sm


_near_cap = over_cap.patience_offer
_at_risk = safe.at_risk


def _near_cap_unless_stalled(counters, last_offer, cap):
    offer = _near_cap(counters, last_offer, cap)
    return None if offer is not None and counters[-1] >= counters[-2] - 0.005 else offer


def _never_at_risk(*_args: Any) -> bool:
    return False


def _episode(task: tuple[float | None, str, str, int]) -> tuple[Any, ...]:
    share, family, buyer, seed = task
    if share is not None:
        safe.ONE_PRICE_SHARE = share
    hold = buyer == HOLD  # a worker plays many tasks: set both rules on each one
    safe.at_risk = _never_at_risk if hold else _at_risk
    over_cap.patience_offer = _near_cap_unless_stalled if hold else _near_cap
    safe.move = _recording_move
    _FIRST_STALL.clear()
    who = "expert" if buyer == HOLD else buyer
    row = quality.play((family, quality.FIELD_PRESET, who, seed))[4]
    taken = _FIRST_STALL[0] if _FIRST_STALL else None
    return share, family, buyer, seed, row.get("surplus"), row.get("lost"), taken


def _probe(task: tuple[str, str, int]) -> tuple[str, str, int, bool]:
    """One field episode with a probe buyer (see the module): whether it closed a deal."""
    persona, mode, seed = task
    env = ProcurementEnv(load_scenario(quality.FIELD_PRESET, persona=persona))
    obs = env.reset(seed=seed)
    r, s = obs.requirements[0], obs.suppliers[0]
    cap = math.floor(r.ceiling_unit_price * 100.0 + 1e-9) / 100.0
    qty = min(r.quantity_needed, s.capacity.get(r.category, 0))
    take = {"action_type": "award_contract", "supplier_id": s.id, "requirement_id": r.id,
            "quantity": qty}  # fmt: skip
    offers = 0
    while not env.done:
        th = obs.threads.get((s.id, r.id))
        if th is not None and th.status != "open":
            action = take if th.status == "agreed" else {"action_type": "defer"}
        elif th is not None and th.counter_price is not None and th.counter_price <= cap:
            action = take
        else:
            offers += 1
            late = mode == "late" and offers < (obs.max_rounds or 1)
            price = round(0.7 * cap, 2) if late else cap
            action = {"action_type": "negotiate", "supplier_id": s.id, "requirement_id": r.id,
                      "price": price}  # fmt: skip
        obs = env.step(action).observation
    return persona, mode, seed, int(env.score().metrics["contracts"]) > 0


def _mean(xs: list[float]) -> float:
    return sum(xs) / len(xs) if xs else float("nan")


def main() -> None:
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--seeds", type=int, default=300)
    ap.add_argument("--seed-start", type=int, default=0)
    ap.add_argument("--shares", default="0,0.3,0.4,0.5")
    ap.add_argument("--procs", type=int, default=2)
    ap.add_argument("--field", action="store_true", help="also probe AgentK and HardHeaded")
    args = ap.parse_args()
    seeds = range(args.seed_start, args.seed_start + args.seeds)
    shares = [float(x) for x in args.shares.split(",") if x]
    tasks = [(sh, f, "expert", s) for f in FAMILIES for sh in shares for s in seeds]
    tasks += [(None, f, b, s) for f in FAMILIES for b in REFERENCES for s in seeds]
    tasks += [(None, f, HOLD, s) for f in quality.HELD_OUT for s in seeds]
    print(
        f"# The expert's stalled-ask share swept: seeds {seeds.start}-{seeds.stop - 1}, "
        f"ONE_PRICE_SHARE {shares} (today {safe.ONE_PRICE_SHARE})"
    )
    with Pool(max(1, args.procs)) as pool:
        rows = pool.map(_episode, tasks, chunksize=8)
        cells: dict[tuple, list[tuple]] = defaultdict(list)
        for share, family, buyer, _seed, surplus, lost, taken in rows:
            cells[(family, buyer, share)].append((surplus, lost, taken))
        print(f"{'buyer':34s}" + "".join(f" {f + ' surplus / lost':>28s}" for f in FAMILIES))
        for buyer, share in [("expert", sh) for sh in shares] + [(b, None) for b in REFERENCES]:
            name = buyer if share is None else f"expert, ONE_PRICE_SHARE {share:g}"
            line = ""
            for f in FAMILIES:
                ok = [c for c in cells[(f, buyer, share)] if c[0] is not None]
                line += f" {_mean([c[0] for c in ok]):17.3f} / {_mean([c[1] for c in ok]):5.3f}"
            print(f"{name:34s}{line}")
        hold = []
        for f in quality.HELD_OUT:
            ok = [c for c in cells[(f, HOLD, None)] if c[0] is not None]
            hold.append(f"{f} {_mean([c[0] for c in ok]):.3f} / {_mean([c[1] for c in ok]):.3f}")
        print(f"{HOLD} (surplus / lost): " + ", ".join(hold))
        for sh in shares:
            met = [c[2] for c in cells[("erratic", "expert", sh)] if c[2] is not None]
            print(
                f"erratic, ONE_PRICE_SHARE {sh:g}: safe.py answered a stalled ask that never "
                f"moved on {len(met)} seed(s), taking it at once on {sum(met)}"
            )
        if args.field:
            personas = ("field_agent_k", "field_hardheaded")
            probes = [(p, m, s) for p in personas for m in ("cap", "late") for s in seeds]
            closed: dict[tuple[str, str], int] = defaultdict(int)
            for persona, mode, _seed, ok in pool.map(_probe, probes, chunksize=10):
                closed[(persona, mode)] += ok
            for persona in personas:
                print(
                    f"{persona}: the ceiling every round closed {closed[(persona, 'cap')]} of "
                    f"{len(seeds)}; 70 % then the ceiling at its patience closed "
                    f"{closed[(persona, 'late')]}"
                )


if __name__ == "__main__":
    main()
