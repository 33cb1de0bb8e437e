"""negotiation/evaluation.py: validation, running (in process and in worker processes),
the leaderboard with its bootstrap CI, and openskill ratings."""

from __future__ import annotations

import io
import math
import statistics

import pytest

from negotiation import apply_tier, load_scenario, run_episode
from negotiation.evaluation import (
    EvaluationError,
    Outcome,
    build_spec,
    evaluate,
    fold_packed,
    format_leaderboard,
    format_ratings,
    leaderboard,
    pack_outcomes,
    ratings,
    run_outcomes,
    unpack_outcomes,
)
from negotiation.scenarios import list_presets
from negotiation.stats import bootstrap_mean_ci

POLICIES = "expert,greedy_lowball,always_accept,random"


@pytest.fixture(scope="module")
def result():
    spec = build_spec(
        policies=POLICIES, scenarios="bilateral_hardball,bilateral_cooperative", seeds=12
    )
    return evaluate(spec)


def _row(rows, scenario, policy, tier=None):
    (row,) = [
        r for r in rows if (r["scenario"], r["policy"], r["tier"]) == (scenario, policy, tier)
    ]
    return row


def test_leaderboard_matches_the_engine_episode_by_episode(result):
    assert len(result.leaderboard) == 8
    row = _row(result.leaderboard, "bilateral_hardball", "always_accept")
    runs = [
        run_episode("bilateral_hardball", "always_accept", s, record_steps=False) for s in range(12)
    ]
    assert row["episodes"] == 12
    assert row["score"]["mean"] == pytest.approx(statistics.mean(r.score for r in runs))
    assert row["deal_rate"] == pytest.approx(statistics.mean(r.metrics["deal_rate"] for r in runs))
    deals = [r for r in runs if r.metrics["deal_rate"] > 0]
    assert row["buyer_share"] == pytest.approx(
        statistics.mean(r.metrics["buyer_share"] for r in deals)
    )
    assert row["rounds_per_deal"] == pytest.approx(
        statistics.mean(r.metrics["rounds_per_deal"] for r in deals)
    )
    assert row["invalid_action_rate"] == pytest.approx(
        statistics.mean(r.metrics["invalid_action_rate"] for r in runs)
    )
    # Best mean score first within each scenario; scenarios in the order given.
    hard = [r for r in result.leaderboard if r["scenario"] == "bilateral_hardball"]
    assert hard[0]["policy"] == "expert"
    assert [r["score"]["mean"] for r in hard] == sorted(
        (r["score"]["mean"] for r in hard), reverse=True
    )
    assert result.leaderboard[0]["scenario"] == "bilateral_hardball"


def test_random_has_no_deal_so_share_and_rounds_are_undefined_not_zero():
    rows = leaderboard([_outcome("random", 0.0, deal=0.0)])
    assert rows[0]["buyer_share"] is None and rows[0]["rounds_per_deal"] is None


def test_score_ci_is_a_bootstrap_interval_around_the_mean(result):
    for row in result.leaderboard:
        s = row["score"]
        assert 0.0 <= s["ci_low"] <= s["mean"] <= s["ci_high"] <= 1.0
    random_row = _row(result.leaderboard, "bilateral_hardball", "random")
    assert random_row["score"]["ci_high"] - random_row["score"]["ci_low"] < 0.1


def test_bootstrap_ci_properties():
    xs = [0.0] * 50 + [1.0] * 50
    ci = bootstrap_mean_ci(xs, seed=1)
    assert ci.mean == 0.5 and 0.38 < ci.low < 0.45 and 0.55 < ci.high < 0.62
    assert bootstrap_mean_ci(xs, seed=1) == ci  # seeded: reproducible
    assert bootstrap_mean_ci([0.3] * 10) == bootstrap_mean_ci([0.3] * 10)
    assert bootstrap_mean_ci([0.3] * 10).low == 0.3
    assert math.isnan(bootstrap_mean_ci([]).mean)
    # More data, narrower interval.
    wide = bootstrap_mean_ci(xs[:10] + xs[50:60])
    assert wide.high - wide.low > ci.high - ci.low
    with pytest.raises(ValueError):
        bootstrap_mean_ci(xs, resamples=0)


def test_ratings_order_is_sensible(result):
    by_name = {r["player"]: r for r in result.ratings}
    assert set(by_name) == {
        "expert",
        "greedy_lowball",
        "always_accept",
        "random",
        "persona:hardball",
        "persona:cooperative",
    }
    ordinal = {n: r["ordinal"] for n, r in by_name.items()}
    assert ordinal["expert"] > ordinal["greedy_lowball"] > ordinal["random"]
    assert ordinal["expert"] > ordinal["always_accept"] > ordinal["random"]
    for r in result.ratings:
        assert r["ordinal"] == pytest.approx(r["mu"] - 3 * r["sigma"])
        assert r["sigma"] < 25 / 3  # every player learned something
    assert (
        by_name["expert"]["kind"] == "buyer" and by_name["persona:hardball"]["kind"] == "supplier"
    )
    # Buyers only among buyers: 24 (scenario, seed) matches. Suppliers only among
    # suppliers: one match per (seed, buyer), both personas facing that buyer.
    assert by_name["expert"]["matches"] == 24
    assert by_name["persona:hardball"]["matches"] == 4 * 12
    kinds = [r["kind"] for r in result.ratings]
    assert kinds == sorted(kinds)  # the buyers' pool, then the suppliers'
    buyers = [r["ordinal"] for r in result.ratings if r["kind"] == "buyer"]
    assert buyers == sorted(buyers, reverse=True)


def _outcome(policy, score, deal=1.0, share=0.8, seed=0, opponent="persona:hardball"):
    return Outcome("bilateral", None, policy, seed, score, deal, share, 0.0, 3.0, 0.0, opponent)


def test_ratings_separate_a_winner_from_a_loser():
    outcomes = []
    for seed in range(20):
        outcomes += [
            _outcome("good", 0.9, share=0.9, seed=seed),
            _outcome("bad", 0.1, share=0.1, seed=seed),
        ]
    r = {x["player"]: x for x in ratings(outcomes)}
    assert r["good"]["mu"] > 25 > r["bad"]["mu"]
    assert r["good"]["matches"] == 20


def test_tiers_run_each_scenario_at_each_tier():
    spec = build_spec(
        policies="expert,random", scenarios="bilateral", seeds=4, tiers="novice,master"
    )
    assert spec.episodes == 16
    out = run_outcomes(spec)
    assert {(o.tier, o.opponent) for o in out} == {
        ("novice", "persona:cooperative"),
        ("master", "persona:hardball"),
    }
    cfg = apply_tier(load_scenario("bilateral"), "novice")
    expected = run_episode(cfg, "expert", 2, record_steps=False).score
    (got,) = [o.score for o in out if o.tier == "novice" and o.policy == "expert" and o.seed == 2]
    assert got == pytest.approx(expected)
    rows = leaderboard(out)
    assert [(r["tier"], r["policy"]) for r in rows] == [
        ("novice", "expert"),
        ("novice", "random"),
        ("master", "expert"),
        ("master", "random"),
    ]
    assert "bilateral@novice" in format_leaderboard(rows)


def test_worker_processes_give_the_same_results_as_one_process():
    spec = build_spec(policies="expert,greedy_lowball", scenarios="easy_negotiation", seeds=30)
    bar = io.StringIO()
    parallel = run_outcomes(spec, workers=2, progress=bar)
    assert parallel == run_outcomes(spec)
    assert "60/60" in bar.getvalue()


def test_all_means_every_rule_preset():
    spec = build_spec(policies="expert", scenarios="all", seeds=1)
    assert list(spec.scenarios) == list_presets(include_llm=False)
    assert "llm_bilateral" not in spec.scenarios


@pytest.mark.parametrize(
    ("kwargs", "field", "text"),
    [
        ({"policies": "expert,human"}, "policies", "needs a person"),
        ({"policies": "ghost"}, "policies", "Unknown policy 'ghost'"),
        ({"policies": "oracle"}, "policies", "benchmarks only"),
        ({"policies": " , "}, "policies", "at least one policy"),
        ({"scenarios": "nope"}, "scenarios", "Unknown scenario 'nope'"),
        ({"scenarios": ""}, "scenarios", "at least one scenario"),
        ({"seeds": 0}, "seeds", "from 1 to"),
        ({"seeds": 10**6}, "seeds", "from 1 to"),
        ({"seeds": 2.5}, "seeds", "whole number"),
        ({"seed_start": -1}, "seed_start", "whole number"),
        ({"tiers": "novice,grandmaster"}, "tiers", "Unknown tier 'grandmaster'"),
    ],
)
def test_bad_input_is_a_clear_error(kwargs, field, text):
    params = {"policies": "expert", "scenarios": "bilateral", "seeds": 2, **kwargs}
    with pytest.raises(EvaluationError) as exc:
        build_spec(**params)
    assert any(e["field"] == field and text in e["message"] for e in exc.value.errors), exc.value


def test_every_problem_is_reported_at_once():
    with pytest.raises(EvaluationError) as exc:
        build_spec(policies="human", scenarios="nope", seeds=0)
    assert {e["field"] for e in exc.value.errors} == {"policies", "scenarios", "seeds"}


def test_too_many_episodes_and_bad_workers_are_refused():
    with pytest.raises(EvaluationError, match="at most"):
        build_spec(
            policies="expert,random,always_accept",
            scenarios="all",
            seeds=10_000,
            tiers="novice,apprentice,master",
        )
    spec = build_spec(policies="expert", scenarios="bilateral", seeds=1)
    for workers in (0, 65, "2"):
        with pytest.raises(EvaluationError, match="workers"):
            run_outcomes(spec, workers=workers)


def test_custom_scenario_configs_are_evaluated_and_validated():
    cfg = load_scenario("bilateral", persona="distressed").model_dump(mode="json")
    spec = build_spec(
        policies="expert", scenarios="my_copy", seeds=2, custom_scenarios={"my_copy": cfg}
    )
    assert {o.opponent for o in run_outcomes(spec)} == {"persona:distressed"}
    with pytest.raises(EvaluationError, match="is invalid"):
        build_spec(
            policies="expert",
            scenarios="broken",
            seeds=2,
            custom_scenarios={"broken": {**cfg, "weeks": -3}},
        )


def test_ratings_table_prints(result):
    text = format_ratings(result.ratings)
    assert "persona:hardball" in text and "ordinal" in text


def test_a_sealed_evaluation_plays_held_out_worlds_that_its_key_reproduces():
    def scores(world_key):
        spec = build_spec(
            policies="expert", scenarios="easy_negotiation", seeds=3, world_key=world_key
        )
        return spec, [o.score for o in run_outcomes(spec)]

    public_spec, public = scores(None)
    sealed_spec, sealed = scores(b"held-out key")
    assert sealed != public and scores(b"held-out key")[1] == sealed
    assert public_spec.params()["sealed"] is False and sealed_spec.params()["sealed"] is True
    assert "held-out key" not in repr(sealed_spec)


def test_packed_outcomes_read_back_whole_and_fold_in_order() -> None:
    spec = build_spec(policies="expert,random", scenarios="bilateral", seeds=3)
    outcomes = run_outcomes(spec)
    whole = pack_outcomes(outcomes)
    back = unpack_outcomes(whole)
    assert back == outcomes  # and the timings, which equality leaves out
    assert [(o.seconds, o.decisions) for o in back] == [
        (round(o.seconds, 6), tuple(round(d, 6) for d in o.decisions)) for o in outcomes
    ]
    pieces = [pack_outcomes(outcomes[:2]), pack_outcomes([]), pack_outcomes(outcomes[2:])]
    assert unpack_outcomes(fold_packed(pieces)) == outcomes
    assert unpack_outcomes(fold_packed([])) == [] == unpack_outcomes(fold_packed([pieces[1]]))
    # the strings many outcomes share are held once (a seal reads up to MAX_EPISODES)
    same_seed = [o for o in back if o.seed == back[0].seed]
    assert len(same_seed) == 2 and same_seed[0].world is same_seed[1].world
    assert len({id(o.scenario) for o in back}) == len({id(o.opponent) for o in back}) == 1
