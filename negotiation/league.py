"""The league tables of an evaluation: leaderboard with paired differences and ties, the
cross-play matrix, the worst case, pass^k, cost, and ratings (buyers and suppliers apart).

Everything here reads finished outcomes (negotiation/evaluation.py plays them). A board is
one (scenario, tier); within it every buyer played the same seeds against the same
supplier line-ups (common random numbers), so buyers are compared seed by seed:

- a buyer's per-seed value is its mean score on that seed over line-ups and replays;
- its paired difference against the board's best buyer is the mean of the per-seed
  differences, with a percentile-bootstrap 95 % CI over seeds (the seeds resampled, each
  keeping both players' values: a paired bootstrap);
- it is **tied** with the best when that interval reaches 0 (not significantly worse).

pass^k (tau-bench): over the (line-up, seed) units, the share on which all k replays
succeeded: every requirement fulfilled, within budget, nothing late.
"""

from __future__ import annotations

import math
import zlib
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import fields
from typing import TYPE_CHECKING, Any

from .stats import bootstrap_mean_ci

if TYPE_CHECKING:
    from .evaluation import Outcome

Board = tuple[str, str | None]
TIE_TOLERANCE = 1e-12


def _boards(outcomes: Iterable[Outcome]) -> dict[Board, list[Outcome]]:
    out: dict[Board, list[Outcome]] = defaultdict(list)
    for o in outcomes:
        out[(o.scenario, o.tier)].append(o)
    return out


def _mean(xs: Sequence[float]) -> float | None:
    return math.fsum(xs) / len(xs) if xs else None


def _mapping(o: Outcome) -> dict[str, Any]:
    """An outcome as the mapping ``summarise`` reads: shallow, since asdict deep-copies
    every field of every outcome."""
    return {f.name: getattr(o, f.name) for f in fields(o)}


def percentile(xs: Sequence[float], q: float) -> float | None:
    """The nearest-rank ``q`` percentile (0-100), None for no values."""
    if not xs:
        return None
    ordered = sorted(xs)
    rank = max(1, math.ceil(q / 100 * len(ordered)))
    return ordered[rank - 1]


def per_seed(outcomes: Iterable[Outcome]) -> dict[int, float]:
    """Each seed's mean score over line-ups and replays."""
    by_seed: dict[int, list[float]] = defaultdict(list)
    for o in outcomes:
        by_seed[o.seed].append(o.score)
    return {s: math.fsum(v) / len(v) for s, v in by_seed.items()}


def paired_difference(
    player: Mapping[int, float], best: Mapping[int, float], *, key: str, resamples: int
) -> dict[str, Any]:
    """Mean of player - best over their common seeds, with a paired bootstrap 95 % CI."""
    seeds = sorted(set(player) & set(best))
    diffs = [player[s] - best[s] for s in seeds]
    ci = bootstrap_mean_ci(diffs, resamples=resamples, seed=zlib.crc32(key.encode())).to_dict()
    return {"mean": ci["mean"], "ci_low": ci["ci_low"], "ci_high": ci["ci_high"], "n": len(seeds)}


def succeeded(o: Outcome) -> bool:
    return o.success


def pass_hat_k(outcomes: Iterable[Outcome]) -> dict[str, Any]:
    """pass^k over (line-up, seed) units: the share whose replays all succeeded; k is the
    smallest number of replays a unit has (units are complete in a finished run)."""
    units: dict[tuple[str, int], list[bool]] = defaultdict(list)
    for o in outcomes:
        units[(o.lineup, o.seed)].append(succeeded(o))
    if not units:
        return {"k": 0, "value": None, "units": 0}
    k = min(len(v) for v in units.values())
    value = sum(all(v) for v in units.values()) / len(units)
    return {"k": k, "value": value, "units": len(units)}


def worst_case(outcomes: Iterable[Outcome]) -> dict[str, Any]:
    """The line-up against which the buyer's mean score is lowest (first listed on ties)."""
    by_lineup: dict[str, list[float]] = defaultdict(list)
    for o in outcomes:
        by_lineup[o.lineup].append(o.score)
    means = {name: math.fsum(v) / len(v) for name, v in by_lineup.items()}
    lineup = min(means, key=lambda n: means[n])
    return {"lineup": lineup, "score": means[lineup]}


def cost(outcomes: Sequence[Outcome]) -> dict[str, Any]:
    """Tokens, time and money per episode; latency per decision (seconds)."""
    decisions = [d for o in outcomes for d in o.decisions]
    seconds = [o.seconds for o in outcomes]
    n = len(outcomes)
    return {
        "prompt_tokens": _mean([o.prompt_tokens for o in outcomes]),
        "completion_tokens": _mean([o.completion_tokens for o in outcomes]),
        "llm_calls": _mean([o.llm_calls for o in outcomes]),
        "money": _mean([o.money for o in outcomes]),
        "money_total": math.fsum(o.money for o in outcomes),
        "episode_p50_s": percentile(seconds, 50),
        "episode_p95_s": percentile(seconds, 95),
        "decision_p50_s": percentile(decisions, 50),
        "decision_p95_s": percentile(decisions, 95),
        "decisions": len(decisions),
        "episodes": n,
    }


def leaderboard(
    outcomes: Sequence[Outcome], *, resamples: int, summarise: Any
) -> list[dict[str, Any]]:
    """One row per (scenario, tier, buyer), best mean first within each board, with the
    paired difference against the board's best, the tie mark, pass^k, the worst case and
    the cost. ``summarise`` is evaluation.summarise (the shared leaderboard numbers)."""
    rows: list[dict[str, Any]] = []
    for (scenario, tier), board in _boards(outcomes).items():
        players: dict[str, list[Outcome]] = defaultdict(list)
        for o in board:
            players[o.policy].append(o)
        seeds = {p: per_seed(rs) for p, rs in players.items()}
        means = {p: math.fsum(v.values()) / len(v) for p, v in seeds.items()}
        best = max(means, key=lambda p: means[p])  # first listed among equals
        board_rows = []
        for policy, rs in players.items():
            key = f"{scenario}/{tier}/{policy}"
            diff = paired_difference(
                seeds[policy], seeds[best], key=f"{key}/vs/{best}", resamples=resamples
            )
            high = diff["ci_high"]
            board_rows.append(
                {
                    "scenario": scenario,
                    "tier": tier,
                    "policy": policy,
                    **summarise([_mapping(o) for o in rs], key=key, resamples=resamples),
                    "seeds": len(seeds[policy]),
                    "lineups": len({o.lineup for o in rs}),
                    "best": policy == best,
                    "vs_best": {"player": best, **diff},
                    "tied": policy == best or (high is not None and high >= -TIE_TOLERANCE),
                    "pass_k": pass_hat_k(rs),
                    "worst": worst_case(rs),
                    "cost": cost(rs),
                }
            )
        board_rows.sort(key=lambda r: -(r["score"]["mean"] or 0.0))
        rows.extend(board_rows)
    return rows


def matrix(outcomes: Sequence[Outcome]) -> list[dict[str, Any]]:
    """Per board, buyers x supplier line-ups: the mean score and the episode count of each
    cell (None where a pair did not play)."""
    out = []
    for (scenario, tier), board in _boards(outcomes).items():
        buyers = list(dict.fromkeys(o.policy for o in board))
        lineups = list(dict.fromkeys(o.lineup for o in board))
        cells: dict[tuple[str, str], list[float]] = defaultdict(list)
        for o in board:
            cells[(o.policy, o.lineup)].append(o.score)
        out.append(
            {
                "scenario": scenario,
                "tier": tier,
                "buyers": buyers,
                "suppliers": lineups,
                "score": [[_mean(cells.get((b, s), [])) for s in lineups] for b in buyers],
                "n": [[len(cells.get((b, s), [])) for s in lineups] for b in buyers],
            }
        )
    return out


def surplus_kept(o: Outcome) -> float:
    """The supplier's side of the surplus: 1 - buyer_share on a deal, 0 without one."""
    return 1.0 - o.buyer_share if o.deal_rate > 0 else 0.0


def supplier_table(outcomes: Sequence[Outcome], *, resamples: int) -> list[dict[str, Any]]:
    """Per board and line-up: the surplus its suppliers kept (bootstrap CI) and deal rate."""
    rows = []
    for (scenario, tier), board in _boards(outcomes).items():
        lineups: dict[str, list[Outcome]] = defaultdict(list)
        for o in board:
            lineups[o.lineup].append(o)
        board_rows = []
        for lineup, rs in lineups.items():
            kept = bootstrap_mean_ci(
                [surplus_kept(o) for o in rs],
                resamples=resamples,
                seed=zlib.crc32(f"{scenario}/{tier}/{lineup}".encode()),
            ).to_dict()
            board_rows.append(
                {
                    "scenario": scenario,
                    "tier": tier,
                    "lineup": lineup,
                    "opponent": rs[0].opponent,
                    "episodes": len(rs),
                    "surplus_kept": kept,
                    "deal_rate": _mean([o.deal_rate for o in rs]),
                }
            )
        board_rows.sort(key=lambda r: -(r["surplus_kept"]["mean"] or 0.0))
        rows.extend(board_rows)
    return rows


def ratings(
    outcomes: Sequence[Outcome],
    extra: Sequence[Outcome] = (),
    extra_suppliers: Sequence[Outcome] = (),
) -> list[dict[str, Any]]:
    """openskill Plackett-Luce ratings in two separate pools, best ordinal first in each:

    - buyers: every (scenario, tier, line-up, seed, replay) is a match among the buyers
      that played it, ranked by score; ``extra`` outcomes (people who played the human
      seat on the same scenario and seed) join those matches as players of their own;
    - suppliers: every (mode, tier, seed, buyer, replay) is a match among the supplier
      players that faced that buyer, ranked by the surplus they kept; ``extra_suppliers``
      (people who played a supplier seat against that buyer on that world) join them.
    """
    from openskill.models import PlackettLuce  # only evaluations need it

    model = PlackettLuce()

    def pool(matches: Iterable[list[tuple[str, float]]], kind: str) -> list[dict[str, Any]]:
        players: dict[str, Any] = {}
        counts: dict[str, int] = defaultdict(int)
        for match in matches:
            scores: dict[str, list[float]] = defaultdict(list)
            for name, value in match:
                scores[name].append(value)
            names = list(scores)
            teams = [[players.setdefault(n, model.rating(name=n))] for n in names]
            if len(names) < 2:
                continue  # no one to beat; listed, unrated (0 matches)
            means = [math.fsum(scores[n]) / len(scores[n]) for n in names]
            for (rated,), name in zip(model.rate(teams, scores=means), names, strict=True):
                players[name] = rated
                counts[name] += 1
        rows = [
            {
                "player": name,
                "kind": kind,
                "mu": r.mu,
                "sigma": r.sigma,
                "ordinal": r.ordinal(),
                "matches": counts[name],
            }
            for name, r in players.items()
        ]
        rows.sort(key=lambda e: -e["ordinal"])
        return rows

    buyer_matches: dict[tuple, list[tuple[str, float]]] = defaultdict(list)
    for o in [*outcomes, *extra]:
        buyer_matches[(o.scenario, o.tier, o.lineup, o.seed, o.replay)].append((o.policy, o.score))
    supplier_matches: dict[tuple, list[tuple[str, float]]] = defaultdict(list)
    for o in [*outcomes, *extra_suppliers]:
        supplier_matches[(o.mode, o.tier, o.seed, o.policy, o.replay)].append(
            (o.opponent, surplus_kept(o))
        )
    return [
        *pool(buyer_matches.values(), "buyer"),
        *pool(supplier_matches.values(), "supplier"),
    ]
