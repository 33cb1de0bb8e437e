"""manage.py evaluate: prints and stores a leaderboard with ratings; bad input stores nothing."""

from __future__ import annotations

import io
import time

import pytest
from django.core.management import CommandError, call_command

from negotiation import load_scenario, run_episode
from procurement.models import Evaluation, PolicyConfig, Scenario
from procurement.services import evaluations as svc


def _call(*args: str) -> tuple[str, str]:
    out, err = io.StringIO(), io.StringIO()
    call_command("evaluate", *args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


@pytest.mark.django_db
def test_evaluate_prints_and_stores_the_leaderboard_and_ratings() -> None:
    text, err = _call(
        "--policies",
        "expert,always_accept,random",
        "--scenarios",
        "bilateral_hardball,bilateral_distressed",
        "--seeds",
        "5",
        "--name",
        "smoke",
    )
    evaluation = Evaluation.objects.get()
    assert evaluation.name == "smoke" and evaluation.created_by is None
    assert evaluation.policies == ["expert", "always_accept", "random"]
    assert evaluation.scenarios == ["bilateral_hardball", "bilateral_distressed"]
    assert (evaluation.seeds, evaluation.seed_start, evaluation.tiers) == (5, 0, [])
    assert evaluation.episodes == 30 and len(evaluation.leaderboard) == 6
    expected = sum(run_episode("bilateral_hardball", "expert", s).score for s in range(5)) / 5
    top = evaluation.leaderboard[0]
    assert (top["scenario"], top["policy"]) == ("bilateral_hardball", "expert")
    assert top["score"]["mean"] == pytest.approx(expected)
    players = {r["player"]: r for r in evaluation.ratings}
    assert players["expert"]["ordinal"] > players["random"]["ordinal"]
    assert {"persona:hardball", "persona:distressed"} <= set(players)
    assert f"Evaluation #{evaluation.pk}: 30 episodes" in text
    assert "bilateral_distressed" in text and "persona:hardball" in text and "ordinal" in text
    assert f"{expected:.3f}" in text
    assert "30/30" in err  # the progress bar


@pytest.mark.django_db
def test_evaluate_per_tier_with_workers() -> None:
    text, _ = _call(
        "--policies",
        "expert,greedy_lowball",
        "--scenarios",
        "bilateral",
        "--seeds",
        "3",
        "--seed-start",
        "10",
        "--tiers",
        "novice,master",
        "--workers",
        "2",
    )
    evaluation = Evaluation.objects.get()
    assert evaluation.tiers == ["novice", "master"] and evaluation.workers == 2
    assert [(r["tier"], r["policy"]) for r in evaluation.leaderboard] == [
        ("novice", "expert"),
        ("novice", "greedy_lowball"),
        ("master", "expert"),
        ("master", "greedy_lowball"),
    ]
    assert "bilateral@novice" in text and "bilateral@master" in text


@pytest.mark.django_db
def test_evaluate_takes_a_stored_scenario_copy(seeded) -> None:
    config = load_scenario("bilateral", persona="deceptive").model_dump(mode="json")
    Scenario.objects.create(name="my-bilateral", config=config)
    _call("--policies", "expert", "--scenarios", "my-bilateral", "--seeds", "2")
    evaluation = Evaluation.objects.get()
    assert evaluation.leaderboard[0]["scenario"] == "my-bilateral"
    assert {r["player"] for r in evaluation.ratings} == {"expert", "persona:deceptive"}


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--policies", "expert,human"], "--policies: 'human' needs a person"),
        (["--policies", "ghost"], "--policies: Unknown policy 'ghost'"),
        (["--policies", "nope"], "--policies: Unknown policy 'nope'"),
        (["--scenarios", "nope"], "--scenarios: Unknown scenario 'nope'"),
        (["--suppliers", "stubborn"], "--suppliers: Unknown supplier line-up 'stubborn'"),
        (["--suppliers", "llm:/no/such/model"], "--suppliers: 'llm:/no/such/model': model"),
        (["--replays", "0"], "--replays: A whole number from 1"),
        (["--price", "smollm2"], "is not MODEL=IN"),
        (["--price", "smollm2=-1"], "prices are numbers >= 0"),
        (["--seeds", "0"], "--seeds: A whole number from 1"),
        (["--seeds", "many"], "'many' is not a whole number"),
        (["--seeds", "20000"], "--seeds: A whole number from 1"),
        (["--tiers", "legend"], "--tiers: Unknown tier 'legend'"),
        (["--workers", "0"], "--workers: A whole number from 1"),
        (["--seed-start", "-1"], "seed"),
        (["--name", "x" * 201], "--name: At most 200"),
    ],
)
def test_bad_input_is_a_command_error_and_stores_nothing(args, message) -> None:
    base = {"--policies": "expert", "--scenarios": "bilateral", "--seeds": "2"}
    base.update(dict(zip(args[::2], args[1::2], strict=True)))
    with pytest.raises(CommandError, match=message.replace("(", r"\(")):
        _call(*[x for pair in base.items() for x in pair])
    assert Evaluation.objects.count() == 0


@pytest.mark.django_db
def test_a_sealed_evaluation_plays_held_out_worlds(settings) -> None:
    settings.WORLD_KEY = "the test server's world key"
    args = ("--policies", "expert", "--scenarios", "easy_negotiation", "--seeds", "3")
    _call(*args)
    _call(*args, "--sealed")
    public, sealed = Evaluation.objects.order_by("pk")
    assert (public.sealed, sealed.sealed) == (False, True)
    mean = [e.leaderboard[0]["score"]["mean"] for e in (public, sealed)]
    expected = sum(run_episode("easy_negotiation", "expert", s).score for s in range(3)) / 3
    assert mean[0] == pytest.approx(expected) and mean[1] != pytest.approx(expected)


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("backend", "model", "message"),
    [
        ("transformers", "/no/such/model", "not a local Hugging Face folder"),
        ("openai_compatible", "http://127.0.0.1:9/v1", "unreachable"),
    ],
)
def test_a_stored_llm_policy_with_no_model_is_refused_before_anything_runs(
    backend, model, message
) -> None:
    PolicyConfig.objects.create(name="ghost", policy="llm", backend=backend, model=model)
    with pytest.raises(CommandError, match=f"--policies: 'ghost': .*{message}"):
        _call("--policies", "expert,ghost", "--scenarios", "bilateral", "--seeds", "2")
    assert Evaluation.objects.count() == 0


@pytest.mark.django_db
def test_stored_policies_play_line_ups_and_the_league_tables_are_stored() -> None:
    PolicyConfig.objects.create(name="expert-copy", policy="expert")
    text, _ = _call(
        "--policies", "expert,expert-copy,random",
        "--scenarios", "bilateral",
        "--suppliers", "cooperative,hardball",
        "--seeds", "4", "--replays", "2",
        "--price", "smollm2=0.1:0.4",
    )  # fmt: skip
    e = Evaluation.objects.get()
    assert (e.suppliers, e.replays, e.episodes) == (["cooperative", "hardball"], 2, 48)
    assert e.prices == {"smollm2": [0.1, 0.4]}
    rows = {r["policy"]: r for r in e.leaderboard}
    assert rows["expert"]["tied"] and rows["expert-copy"]["tied"] and not rows["random"]["tied"]
    assert rows["expert"]["pass_k"]["k"] == 2
    (board,) = e.matrix
    assert board["buyers"] == ["expert", "expert-copy", "random"]
    assert board["suppliers"] == ["cooperative", "hardball"]
    assert {r["lineup"] for r in e.supplier_table} == {"cooperative", "hardball"}
    assert {r["kind"] for r in e.ratings} == {"buyer", "supplier"}
    assert "buyers x suppliers" in text and "tied with the best" in text


# SQLite's test database lives in memory with a shared cache, which locks whole tables
# across threads at once (no busy wait); the embedded file database (WAL, a busy
# timeout) is what the command meets there.
@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)  # the lanes' threads read what the command wrote
def test_the_command_plays_its_lanes_at_once_with_a_bar_each(tiny_model, monkeypatch) -> None:
    """Before: the command played its rule lane, then its model lane. After: both at
    once, a thread each (as the cpu and gpu workers play them), each with its own bar."""
    PolicyConfig.objects.create(
        name="llm-tiny-cmd", policy="llm", backend="transformers", model=str(tiny_model)
    )
    spans: dict[str, tuple[float, float]] = {}
    real = svc._play_lane

    def timed(evaluation_id, part, *args, **kwargs):
        start = time.monotonic()
        try:
            return real(evaluation_id, part, *args, **kwargs)
        finally:
            spans[part.lane] = (start, time.monotonic())

    monkeypatch.setattr(svc, "_play_lane", timed)
    text, err = _call(
        "--policies", "expert,random,llm-tiny-cmd", "--scenarios", "bilateral", "--seeds", "4"
    )  # fmt: skip
    (rule_start, rule_end), (llm_start, llm_end) = spans["rule"], spans["llm"]
    assert rule_start < llm_end and llm_start < rule_end, spans  # they overlapped
    assert "rule lane" in err and "llm lane" in err  # a bar each
    evaluation = Evaluation.objects.get()
    assert (evaluation.status, len(evaluation.outcomes)) == ("finished", 12)
    assert {p.lane: p.done_episodes for p in evaluation.parts.all()} == {"rule": 8, "llm": 4}
    assert "rule lane (cpu): 8/8 episodes, " in text and "s of play, finished" in text
    assert "model lane (gpu): 4/4 episodes, " in text


@pytest.mark.django_db
def test_a_sealed_evaluation_prints_its_second_reading_without_exposed_worlds(
    seeded, settings
) -> None:
    from django.contrib.auth import get_user_model

    from procurement.services.supplier_seat import supplier_seat_start

    settings.WORLD_KEY = "the test server's world key"
    person = get_user_model().objects.create_user("seat-player")
    for seed in (11, 13):  # a person plays two of the seeds before the range is sealed
        supplier_seat_start(
            scenario=Scenario.objects.get(name="bilateral"),
            policy=PolicyConfig.objects.get(name="expert"),
            user=person,
            seed=seed,
        )
    args = ("--policies", "expert,always_accept", "--scenarios", "bilateral")
    out, _ = _call(*args, "--seeds", "5", "--seed-start", "10", "--sealed")
    evaluation = Evaluation.objects.get()
    assert evaluation.leaderboard_unexposed
    heading = (
        "Without exposed worlds. Dropped bilateral seeds 11, 13 (2 of 5 seeds) for every buyer "
        "and line-up, because a person played those worlds in a seat"
    )
    assert heading in out
    second = out.split(heading, 1)[1]
    for row in evaluation.leaderboard_unexposed:  # each unseen-seed mean, as stored
        assert f"{row['score']['mean']:.3f}" in second

    out, _ = _call(*args, "--seeds", "5", "--seed-start", "20", "--sealed")
    assert "Without exposed worlds" not in out  # nothing exposed on these seeds
