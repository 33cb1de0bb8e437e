"""negotiation/league.py and the league side of negotiation/evaluation.py: paired seeds,
ties, pass^k, the worst line-up, cost, separate rating pools, and LLM players."""

from __future__ import annotations

from typing import Any

import pytest

from negotiation.evaluation import (
    EvaluationError,
    Outcome,
    build_spec,
    evaluate,
    run_outcomes,
)
from negotiation.league import pass_hat_k, worst_case
from negotiation.observation import Observation
from negotiation.players import replay_seed
from negotiation.policies import _REGISTRY, get_policy, register_policy
from negotiation.policies.base import Policy
from negotiation.runner import run_episode


def _o(policy="p", seed=0, score=0.5, lineup="scenario", replay=0, success=False) -> Outcome:
    return Outcome(
        "bilateral", None, policy, seed, score, 1.0, 0.5, 0.0, 3.0, 0.0, "persona:hardball",
        lineup, replay, "bilateral", success,
    )  # fmt: skip


def test_a_seed_draws_the_same_world_for_every_player_and_line_up_keeps_it_paired():
    spec = build_spec(
        policies="expert,random,always_accept",
        scenarios="bilateral",
        suppliers="hardball,cooperative",
        seeds=3,
    )
    outcomes = run_outcomes(spec)
    assert len(outcomes) == 3 * 2 * 3
    worlds: dict[tuple[str, int], set[str]] = {}
    for o in outcomes:
        worlds.setdefault((o.lineup, o.seed), set()).add(o.world)
    assert all(len(w) == 1 for w in worlds.values())  # one world per seed, every buyer
    per_seed = {seed: worlds[("hardball", seed)] for seed in range(3)}
    assert len(set.union(*per_seed.values())) == 3  # seeds differ from each other
    assert evaluate(spec).paired


def test_two_copies_of_one_policy_are_tied_and_a_worse_one_is_not():
    spec = build_spec(
        policies="copy_a,copy_b,random",
        stored_policies={"copy_a": {"policy": "expert"}, "copy_b": {"policy": "expert"}},
        scenarios="bilateral",
        seeds=12,
    )
    rows = {r["policy"]: r for r in evaluate(spec).leaderboard}
    assert rows["copy_a"]["best"] and rows["copy_a"]["tied"]
    assert rows["copy_b"]["tied"] and not rows["copy_b"]["best"]
    assert rows["copy_b"]["vs_best"] == {
        "player": "copy_a", "mean": 0.0, "ci_low": 0.0, "ci_high": 0.0, "n": 12,
    }  # fmt: skip
    assert not rows["random"]["tied"]
    assert rows["random"]["vs_best"]["ci_high"] < 0
    assert rows["random"]["seeds"] == 12 and rows["random"]["episodes"] == 12


def test_pass_hat_k_counts_seeds_whose_every_replay_succeeded():
    outcomes = [
        *(_o(seed=0, replay=r, success=True) for r in range(3)),  # all pass
        *(_o(seed=1, replay=r, success=r != 2) for r in range(3)),  # one fails
        *(_o(seed=2, replay=r, success=True) for r in range(3)),  # all pass
        *(_o(seed=3, replay=r, success=False) for r in range(3)),
    ]
    assert pass_hat_k(outcomes) == {"k": 3, "value": 0.5, "units": 4}


class CoinPolicy(Policy):
    """Scripted and stochastic: plays the expert when its own seed is even, else nothing."""

    name = "test_coin"

    def __init__(self, seed: int = 0, **params: Any) -> None:
        super().__init__(seed, **params)
        self.expert = get_policy("expert", seed=seed)
        self.idle = get_policy("do_nothing", seed=seed)

    def reset(self, seed: int | None = None) -> None:
        super().reset(seed)
        self.expert.reset(seed)

    def act(self, obs: Observation) -> dict[str, Any]:
        return (self.expert if self.seed % 2 == 0 else self.idle).act(obs)


@pytest.fixture
def coin():
    register_policy("test_coin", CoinPolicy)
    yield "test_coin"
    _REGISTRY.pop("test_coin", None)


def test_pass_hat_k_on_a_scripted_stochastic_policy_has_the_known_answer(coin):
    seeds, k = 16, 3
    spec = build_spec(policies=coin, scenarios="bilateral_cooperative", seeds=seeds, replays=k)
    (row,) = evaluate(spec).leaderboard
    assert row["episodes"] == seeds * k and row["seeds"] == seeds

    def expert_succeeds(seed: int) -> bool:
        m = run_episode("bilateral_cooperative", "expert", seed, record_steps=False).metrics
        return (
            m["fulfilment_rate"] >= 1 and m["budget_utilisation"] <= 1 and not m["late_deliveries"]
        )

    # A replay succeeds only when its seed is even and the expert wins that world.
    known = (
        sum(
            expert_succeeds(s) and all(replay_seed(s, r) % 2 == 0 for r in range(k))
            for s in range(seeds)
        )
        / seeds
    )
    assert row["pass_k"] == {"k": k, "value": pytest.approx(known), "units": seeds}
    assert 0 < known < sum(expert_succeeds(s) for s in range(seeds)) / seeds  # not trivial


def test_worst_case_names_the_weakest_line_up():
    outcomes = [
        _o(lineup="cooperative", score=0.9),
        _o(lineup="deceptive", score=0.2),
        _o(lineup="deceptive", score=0.4, seed=1),
        _o(lineup="hardball", score=0.5),
    ]
    assert worst_case(outcomes) == {"lineup": "deceptive", "score": pytest.approx(0.3)}
    spec = build_spec(
        policies="expert,always_accept",
        scenarios="bilateral",
        suppliers="cooperative,hardball,distressed",
        seeds=8,
    )
    result = evaluate(spec)
    rows = {r["policy"]: r for r in result.leaderboard}
    assert rows["expert"]["worst"]["lineup"] == "hardball"  # the toughest seller
    (board,) = result.matrix
    assert board["buyers"] == ["expert", "always_accept"]
    assert board["suppliers"] == ["cooperative", "hardball", "distressed"]
    assert board["n"] == [[8, 8, 8], [8, 8, 8]]
    assert rows["expert"]["worst"]["score"] == pytest.approx(min(board["score"][0]))


def test_ratings_keep_buyers_and_suppliers_apart_and_rate_suppliers_by_surplus_kept():
    spec = build_spec(
        policies="expert,random", scenarios="bilateral", suppliers="cooperative,hardball", seeds=6
    )
    result = evaluate(spec)
    by = {(r["kind"], r["player"]): r for r in result.ratings}
    assert set(by) == {
        ("buyer", "expert"), ("buyer", "random"),
        ("supplier", "persona:cooperative"), ("supplier", "persona:hardball"),
    }  # fmt: skip
    assert by[("buyer", "expert")]["matches"] == 2 * 6  # one per (line-up, seed)
    assert by[("supplier", "persona:hardball")]["matches"] == 2 * 6  # per (buyer, seed)
    assert (
        by[("supplier", "persona:hardball")]["mu"] > by[("supplier", "persona:cooperative")]["mu"]
    )
    kept = {r["lineup"]: r["surplus_kept"]["mean"] for r in result.suppliers}
    assert kept["hardball"] > kept["cooperative"]


def test_rule_cells_report_latency_and_no_tokens():
    spec = build_spec(policies="expert", scenarios="bilateral", seeds=3)
    (row,) = evaluate(spec).leaderboard
    cost = row["cost"]
    assert cost["prompt_tokens"] == 0 and cost["money"] == 0
    assert cost["decisions"] > 0 and 0 <= cost["decision_p50_s"] <= cost["decision_p95_s"]
    assert cost["episode_p50_s"] > 0


@pytest.fixture(scope="module")
def long_tiny_model(tmp_path_factory):
    """The tiny test model with room for a whole negotiation's prompts (4096 positions)."""
    from tests.llm_models import build_tiny_model

    return build_tiny_model(tmp_path_factory.mktemp("tiny4k") / "gpt2", max_positions=4096)


def test_llm_buyers_and_llm_suppliers_play_batched_with_their_cost(long_tiny_model):
    tiny_model = long_tiny_model
    llm = {"policy": "llm", "backend": "transformers", "model": str(tiny_model), "params": {}}
    spec = build_spec(
        policies="expert,tiny",
        stored_policies={"tiny": llm},
        scenarios="bilateral",
        suppliers=f"hardball,llm:{tiny_model}",
        seeds=1,
        prices={str(tiny_model): (1000.0, 2000.0)},
    )
    result = evaluate(spec)
    rows = {r["policy"]: r for r in result.leaderboard}
    assert rows["tiny"]["episodes"] == 2 and rows["expert"]["episodes"] == 2
    tiny_cost = rows["tiny"]["cost"]
    assert tiny_cost["prompt_tokens"] > 0 and tiny_cost["completion_tokens"] > 0
    expected = (tiny_cost["prompt_tokens"] * 1000 + tiny_cost["completion_tokens"] * 2000) / 1e6
    assert tiny_cost["money"] == pytest.approx(expected)
    # the rule buyer pays for the LLM suppliers it faced, only in those cells
    assert rows["expert"]["cost"]["prompt_tokens"] > 0
    (board,) = result.matrix
    assert board["n"] == [[1, 1], [1, 1]] and None not in board["score"][1]
    assert result.paired


@pytest.mark.parametrize(
    ("kwargs", "field", "text"),
    [
        (
            {"policies": "ghost_model", "stored_policies": {"ghost_model": {
                "policy": "llm", "backend": "transformers", "model": "/no/such/model"}}},
            "policies", "not a local Hugging Face folder",
        ),
        (
            {"policies": "remote", "stored_policies": {"remote": {
                "policy": "llm", "backend": "openai_compatible",
                "model": "http://127.0.0.1:9/v1"}}},
            "policies", "unreachable",
        ),
        ({"suppliers": "llm:/no/such/model"}, "suppliers", "not a local Hugging Face folder"),
        ({"suppliers": "stubborn"}, "suppliers", "Unknown supplier line-up 'stubborn'"),
        ({"suppliers": "llm:"}, "suppliers", "names no model"),
        ({"replays": 0}, "replays", "from 1 to"),
        ({"prices": {"smollm2": (-1, 0)}}, "prices", ">= 0"),
        ({"seeds": 10_001}, "seeds", "from 1 to"),
    ],
)  # fmt: skip
def test_bad_league_input_is_a_clear_error(kwargs, field, text):
    params = {"policies": "expert", "scenarios": "bilateral", "seeds": 2, **kwargs}
    with pytest.raises(EvaluationError) as exc:
        build_spec(**params)
    assert any(e["field"] == field and text in e["message"] for e in exc.value.errors), exc.value
