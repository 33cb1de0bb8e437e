"""An evaluation's lanes on the embedded default, with a real (tiny) language model: its
rule episodes play on the rule lane while its model episodes wait for the model lane,
the run is sealed once both end, with the tables one process playing it all computes;
the model lane tells its progress per episode, stops within an episode on cancel, and a
lane played again after a stop plays only what it had not stored."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from django.test import override_settings

from negotiation.evaluation import evaluate
from procurement.models import Evaluation, EvaluationPart, EvaluationPiece, PolicyConfig
from procurement.selectors.evaluations import evaluation_payload
from procurement.services import evaluations as svc
from procurement.services import live
from tests.lane_kill import killed_after_stores
from tests.workers.fault_stack import Stack, wait_until
from tests.workers.helpers import seeded
from tests.workers.model_lane import gate, hold_model_lane, local_runner, until
from workers import tasks  # noqa: F401 - registers the run tasks the lanes look up
from workers.inprocess import InProcessRunner

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.timeout(600)]


@pytest.fixture
def one_model_thread() -> Iterator[InProcessRunner]:
    yield from local_runner(llm_threads=1)


@pytest.fixture
def llm_tiny(tiny_model) -> str:
    seeded()
    PolicyConfig.objects.create(
        name="llm-tiny-eval", policy="llm", backend="transformers", model=str(tiny_model)
    )
    return "llm-tiny-eval"


def _lane(evaluation: Evaluation, lane: str) -> EvaluationPart:
    return EvaluationPart.objects.get(evaluation=evaluation, lane=lane)


@override_settings(TASK_RUNNER="thread")
def test_rule_episodes_play_while_the_model_lane_is_busy_and_the_run_seals_once(
    one_model_thread, llm_tiny
) -> None:
    gate.clear()
    one_model_thread.submit(hold_model_lane.name, queue="gpu")
    until(lambda: one_model_thread.status()["lanes"]["gpu"]["running"], 10, "hold")
    params = {
        "policies": f"expert,always_accept,{llm_tiny}",
        "scenarios": "bilateral",
        "suppliers": "scenario,hardball",
        "seeds": 3,
    }
    evaluation = svc.start_evaluation(**params)
    assert (evaluation.episodes, evaluation.llm_episodes) == (18, 6)
    rule = _lane(evaluation, "rule")
    took = until(lambda: _lane(evaluation, "rule").status == "finished", 60, "the rule lane")
    evaluation.refresh_from_db()
    assert (evaluation.status, evaluation.done_episodes) == ("running", 12)  # not sealed yet
    assert _lane(evaluation, "llm").status == "queued"  # behind the model lane's hold
    assert EvaluationPiece.objects.filter(evaluation=evaluation, lane="rule").exists()
    lanes = {lane["lane"]: lane for lane in evaluation_payload(evaluation)["lanes"]}
    assert (lanes["rule"]["done_episodes"], lanes["rule"]["status"]) == (12, "finished")
    assert (lanes["llm"]["queue"], lanes["llm"]["episodes"]) == ("gpu", 6)
    print(f"\nrule lane: 12 episodes done {took:.2f} s after the start, model lane held")
    gate.set()
    assert one_model_thread.join(timeout=300)
    evaluation.refresh_from_db()
    assert (evaluation.status, evaluation.done_episodes) == ("finished", 18), evaluation.error
    assert not EvaluationPiece.objects.filter(evaluation=evaluation).exists()
    assert {b for m in evaluation.matrix for b in m["buyers"]} == set(params["policies"].split(","))
    # the same tables as one process playing it all: rule players exactly (the model's
    # rows may differ in timings and token counts only; its scores too are compared)
    spec = svc._pinned_spec(evaluation)
    whole = evaluate(spec)
    assert [svc.outcome_row(o)[:11] for o in whole.outcomes] == [
        r[:11] for r in evaluation.outcomes
    ]
    keep = ("scenario", "policy", "episodes", "score")
    assert [{k: r[k] for k in keep} for r in whole.leaderboard] == [
        {k: r[k] for k in keep} for r in evaluation.leaderboard
    ]
    assert rule.queue == "cpu" and _lane(evaluation, "llm").queue == "gpu"


def test_the_model_lane_tells_each_episode_and_a_cancel_stops_it_within_one(
    llm_tiny, monkeypatch
) -> None:
    monkeypatch.setattr(svc, "FLUSH_INTERVAL_S", 0.0)
    evaluation = svc.start_evaluation(
        policies=llm_tiny, scenarios="bilateral", seeds=40, enqueue=False
    )
    told: list[int] = []

    def publish(e: Evaluation) -> None:
        told.append(e.done_episodes)
        if e.done_episodes >= 5 and e.status == "running":  # someone presses Cancel
            Evaluation.objects.filter(pk=e.pk).update(status="cancelled")

    monkeypatch.setattr(live, "publish_evaluation_progress", publish)
    stopped = svc.evaluation_execute(evaluation_id=evaluation.pk)
    assert stopped.status == "cancelled"
    steps = [n for n in told if n]
    assert steps[:5] == [1, 2, 3, 4, 5]  # one episode at a time, not a batch of 64
    # the episodes playing when it was cancelled finish; no new one starts
    assert 5 <= _lane(stopped, "llm").done_episodes < 40 and stopped.leaderboard == []
    assert not EvaluationPiece.objects.exists()  # a cancelled run keeps no pieces


@pytest.mark.parametrize("policies", ["expert,always_accept", "llm-tiny-eval"])
def test_a_lane_played_again_plays_only_what_it_had_not_stored(
    llm_tiny, monkeypatch, policies
) -> None:
    monkeypatch.setattr(svc, "FLUSH_INTERVAL_S", 0.0)
    evaluation = svc.start_evaluation(
        policies=policies, scenarios="bilateral", seeds=60 if "," in policies else 12,
        enqueue=False,
    )  # fmt: skip
    with killed_after_stores(monkeypatch, 3):
        svc.evaluation_execute(evaluation_id=evaluation.pk)
    stored = sum(EvaluationPiece.objects.values_list("episodes", flat=True))
    assert 0 < stored < evaluation.episodes
    # the lane's heartbeat is fresh: a duplicate delivery now leaves it to its player
    assert svc.evaluation_execute(evaluation_id=evaluation.pk).status == "running"
    EvaluationPart.objects.filter(evaluation=evaluation).update(heartbeat_at=None)
    played = []
    original = svc.run_outcomes

    def counting(*args, **kwargs):
        out = original(*args, **kwargs)
        played.extend(out)
        return out

    monkeypatch.setattr(svc, "run_outcomes", counting)
    done = svc.evaluation_execute(evaluation_id=evaluation.pk)
    assert done.status == "finished" and len(done.outcomes) == evaluation.episodes
    assert len(played) == evaluation.episodes - stored  # nothing played twice
    whole = evaluate(svc._pinned_spec(done))
    assert [svc.outcome_row(o)[:9] for o in whole.outcomes] == [r[:9] for r in done.outcomes]


@pytest.mark.postgres
@pytest.mark.redis
@pytest.mark.celery_worker
@pytest.mark.xdist_group("fault_stack")  # one private PostgreSQL (stack_pg)
def test_through_celery_the_rule_lane_ends_on_cpu_while_the_model_lane_waits_for_gpu(
    stack_pg, tiny_model
) -> None:
    """Real Celery workers and PostgreSQL: with only a cpu worker up, a mixed run's rule
    lane plays to its end and the run waits, unsealed, for its model lane; a gpu worker
    then plays that lane and seals the run with every episode."""
    stack = Stack(stack_pg)
    try:
        stack.manage("migrate", "--noinput")
        stack.manage("seed_presets")
        stack.redis.start()
        stack.worker("cpu-only", queues="cpu")
        evaluation = stack.django(
            "import json\n"
            "from procurement.models import PolicyConfig\n"
            "from procurement.services.evaluations import start_evaluation\n"
            "PolicyConfig.objects.create(name='llm-tiny', policy='llm', backend='transformers',"
            f" model={str(tiny_model)!r})\n"
            "e = start_evaluation(policies='expert,always_accept,llm-tiny',"
            " scenarios='bilateral', seeds=3)\n"
            "print(json.dumps(e.pk))"
        )

        def lanes() -> dict[str, tuple[str, int]]:
            rows = stack.sql(
                "SELECT lane, status, done_episodes FROM procurement_evaluationpart"
                " WHERE evaluation_id=%s",
                evaluation,
            )
            return {lane: (status, done) for lane, status, done in rows}

        wait_until(lambda: lanes()["rule"] == ("finished", 6), timeout=60, what="the rule lane")
        time.sleep(2)  # the model lane's message waits on gpu, which no worker reads
        assert lanes()["llm"] == ("queued", 0)
        assert stack.status("evaluation", evaluation) == "running"
        stack.worker("gpu-only", queues="gpu", concurrency=1)
        wait_until(
            lambda: stack.status("evaluation", evaluation) == "finished",
            timeout=150,
            what="the model lane and the seal",
        )
        ((rows, done),) = stack.sql(
            "SELECT outcomes, done_episodes FROM procurement_evaluation WHERE id=%s", evaluation
        )
        assert done == 9 and len({tuple(r[:6]) for r in rows}) == 9
        assert {r[3] for r in rows} == {"expert", "always_accept", "llm-tiny"}
        assert lanes() == {"rule": ("finished", 6), "llm": ("finished", 3)}
    finally:
        stack.close()
