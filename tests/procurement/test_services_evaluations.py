"""start_evaluation: checks before anything is created, routing by what the evaluation
plays (the gpu queue for language models), the run's life cycle, cancel, restart."""

from __future__ import annotations

import base64
import json
from datetime import timedelta
from pathlib import Path

import pytest
from django.core.exceptions import ValidationError
from django.test import override_settings
from django.utils import timezone

from negotiation.evaluation import combine, evaluate, unpack_outcomes
from procurement import dispatch
from procurement.broker import run_ref
from procurement.errors import Conflict, QuotaExceeded
from procurement.models import (
    Evaluation,
    EvaluationPart,
    EvaluationPiece,
    EvaluationStatus,
    PolicyConfig,
)
from procurement.services import evaluations as svc
from procurement.services import live
from procurement.services.recovery import reconcile
from tests.lane_kill import killed_after_stores
from tests.recording_runner import RecordingRunner


@pytest.fixture
def model_folder(tmp_path) -> Path:
    """A folder the preflight takes for a model (its config.json); nothing loads it."""
    (tmp_path / "config.json").write_text("{}")
    return tmp_path


BAD_INPUTS = [
    ({"policies": "expert,nobody"}, "policies", "Unknown policy 'nobody'"),
    ({"policies": "human"}, "policies", "needs a person"),
    ({"suppliers": "hardball,shouty"}, "suppliers", "Unknown supplier line-up 'shouty'"),
    ({"suppliers": "llm:/no/such/model"}, "suppliers", "/no/such/model"),
    (
        # port 9 (discard) refuses at once here: the server does not answer GET /models
        {"suppliers": "llm:openai_compatible:http://127.0.0.1:9/v1"},
        "suppliers",
        "127.0.0.1:9",
    ),
    ({"scenarios": "atlantis"}, "scenarios", "Unknown scenario 'atlantis'"),
    ({"seeds": 10_001}, "seeds", "from 1 to 10000"),
    ({"seeds": 0}, "seeds", "from 1 to 10000"),
    ({"replays": 33}, "replays", "from 1 to 32"),
    ({"workers": 0}, "workers", "from 1 to 64"),
    ({"name": "x" * 201}, "name", "At most 200"),
    ({"prices": {"smollm2": (-1.0, 0.0)}}, "prices", ">= 0"),
]


@pytest.mark.django_db
@pytest.mark.parametrize(("change", "field", "message"), BAD_INPUTS)
def test_bad_input_is_a_clear_error_and_creates_nothing(
    db, change, field, message, django_capture_on_commit_callbacks
) -> None:
    params = {"policies": "expert", "scenarios": "bilateral", "seeds": 2, **change}
    with (
        django_capture_on_commit_callbacks() as callbacks,
        pytest.raises(ValidationError) as raised,
    ):
        svc.start_evaluation(**params)
    assert field in raised.value.message_dict
    assert message in " ".join(raised.value.message_dict[field])
    assert Evaluation.objects.count() == 0 and callbacks == []


@pytest.mark.django_db
def test_an_unknown_stored_model_is_refused(db) -> None:
    PolicyConfig.objects.create(
        name="ghost", policy="llm", backend="transformers", model="/no/such/folder"
    )
    with pytest.raises(ValidationError) as raised:
        svc.start_evaluation(policies="expert,ghost", scenarios="bilateral", seeds=2)
    assert "'ghost'" in raised.value.message_dict["policies"][0]
    assert Evaluation.objects.count() == 0


def _sent_messages(queue: str) -> list[dict]:
    """The messages waiting in ``queue`` of the producer's (in-memory) broker."""
    with dispatch.producer().connection_for_write() as conn:
        channel = conn.default_channel
        out = []
        while (message := channel._get(queue) if channel._size(queue) else None) is not None:
            out.append(message if isinstance(message, dict) else json.loads(message))
        return out


def _lane(message: dict) -> str:
    body = message["body"]
    if (message.get("properties") or {}).get("body_encoding") == "base64":
        body = base64.b64decode(body)
    return json.loads(body)[0][1]


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("params", "queue", "lanes"),
    [
        (
            {"policies": "expert,always_accept", "suppliers": "scenario,hardball"},
            "cpu",
            {"cpu": ["rule"], "gpu": []},
        ),
        (
            {"policies": "expert", "suppliers": "hardball,llm:{model}"},
            "gpu",
            {"cpu": ["rule"], "gpu": ["llm"]},
        ),
        (
            {"policies": "expert,llm-tiny", "suppliers": "hardball"},
            "gpu",
            {"cpu": ["rule"], "gpu": ["llm"]},
        ),
        ({"policies": "expert", "scenarios": "llm_bilateral"}, "gpu", {"cpu": [], "gpu": ["llm"]}),
    ],
)
def test_celery_gets_each_lane_on_its_queue(
    db, model_folder, params, queue, lanes, django_capture_on_commit_callbacks
) -> None:
    """The real producer sends the tasks (to an in-memory broker): a mixed evaluation's
    rule episodes wait on cpu and its model episodes on gpu, one message per lane."""
    PolicyConfig.objects.create(
        name="llm-tiny", policy="llm", backend="transformers", model=str(model_folder)
    )
    params = {k: v.format(model=model_folder) for k, v in params.items()}
    params.setdefault("scenarios", "bilateral")
    dispatch.producer.cache_clear()
    try:
        with override_settings(TASK_RUNNER="celery", CELERY_BROKER_URL="memory://"):
            with django_capture_on_commit_callbacks(execute=True):
                evaluation = svc.start_evaluation(**params, seeds=2)
            sent = {q: _sent_messages(q) for q in ("cpu", "gpu")}
    finally:
        dispatch.producer.cache_clear()
    assert evaluation.queue == queue and evaluation.status == EvaluationStatus.QUEUED
    assert {q: [_lane(m) for m in sent[q]] for q in sent} == lanes
    assert {run_ref(m) for q in sent for m in sent[q]} == {("evaluation", evaluation.pk)}
    parts = {p.lane: (p.queue, p.episodes) for p in evaluation.parts.all()}
    assert sum(n for _, n in parts.values()) == evaluation.episodes
    assert parts.get("llm", (None, 0))[1] == evaluation.llm_episodes


@pytest.mark.django_db
def test_a_run_plays_to_the_end_with_its_progress_and_episodes(db, monkeypatch) -> None:
    told = []
    monkeypatch.setattr(svc, "FLUSH_INTERVAL_S", 0.0)
    monkeypatch.setattr(
        live, "publish_evaluation_progress", lambda e: told.append((e.status, e.done_episodes))
    )
    evaluation = svc.start_evaluation(
        policies="expert,always_accept",
        scenarios="bilateral",
        suppliers="scenario,hardball",
        seeds=3,
        enqueue=False,
    )
    assert (evaluation.status, evaluation.queue, evaluation.episodes) == ("queued", "cpu", 12)
    done = svc.evaluation_execute(evaluation_id=evaluation.pk)
    assert done.status == EvaluationStatus.FINISHED and done.done_episodes == 12
    assert done.started_at <= done.finished_at and done.heartbeat_at is not None
    counts = [n for status, n in told if status == "running"]
    assert counts[0] == 0 and counts == sorted(counts) and any(0 < n < 12 for n in counts)
    assert told[-1] == ("finished", 12)
    assert len(done.outcomes) == 12 and {len(m["buyers"]) for m in done.matrix} == {2}
    # a second delivery of the task finds it over and plays nothing
    assert svc.evaluation_execute(evaluation_id=evaluation.pk).finished_at == done.finished_at


@pytest.mark.django_db
def test_cancel_stops_a_running_evaluation_and_a_queued_one_never_starts(db, monkeypatch) -> None:
    evaluation = svc.start_evaluation(
        policies="random,always_accept", scenarios="bilateral", seeds=60, enqueue=False
    )
    monkeypatch.setattr(svc, "FLUSH_INTERVAL_S", 0.0)
    seen = []

    def cancel_once_started(e: Evaluation) -> None:  # someone presses Cancel meanwhile
        seen.append(e.done_episodes)
        if e.done_episodes > 0 and e.status == "running":
            Evaluation.objects.filter(pk=e.pk).update(status=EvaluationStatus.CANCELLED)

    monkeypatch.setattr(live, "publish_evaluation_progress", cancel_once_started)
    stopped = svc.evaluation_execute(evaluation_id=evaluation.pk)
    assert stopped.status == EvaluationStatus.CANCELLED
    assert 0 < stopped.done_episodes < 120 and stopped.leaderboard == []

    queued = svc.start_evaluation(policies="expert", scenarios="bilateral", seeds=2, enqueue=False)
    svc.evaluation_cancel(evaluation=queued)
    assert svc.evaluation_execute(evaluation_id=queued.pk).status == "cancelled"
    with pytest.raises(Conflict):
        svc.evaluation_cancel(evaluation=queued)


@pytest.mark.django_db
def test_the_reconciler_restarts_a_stalled_evaluation_on_its_queue(
    db, model_folder, monkeypatch, django_capture_on_commit_callbacks
) -> None:
    rule = svc.start_evaluation(policies="expert", scenarios="bilateral", seeds=2, enqueue=False)
    llm = svc.start_evaluation(
        policies="expert", scenarios="bilateral", suppliers=f"llm:{model_folder}", seeds=2,
        enqueue=False,
    )  # fmt: skip
    old = timezone.now() - timedelta(hours=1)
    Evaluation.objects.update(status=EvaluationStatus.RUNNING, heartbeat_at=old, created_at=old)
    sent = []
    monkeypatch.setattr(dispatch, "_local_runner", lambda: RecordingRunner(sent))
    with (
        override_settings(TASK_RUNNER="thread"),
        django_capture_on_commit_callbacks(execute=True),
    ):
        done = reconcile(stall_s=60)
    assert sorted(done.evaluations_restarted) == sorted([rule.pk, llm.pk])
    # the runs stay running (their first start stands); their lanes are queued again
    assert Evaluation.objects.filter(status=EvaluationStatus.RUNNING).count() == 2
    assert {p.status for p in EvaluationPart.objects.all()} == {"queued"}
    # each open lane is sent again on its own queue
    assert sorted((args, queue) for _, args, queue in sent) == sorted(
        [((rule.pk, "rule"), "cpu"), ((llm.pk, "llm"), "gpu")]
    )


@pytest.mark.django_db
def test_a_run_whose_lanes_all_ended_unsealed_is_sealed_on_resume(
    db, monkeypatch, django_capture_on_commit_callbacks
) -> None:
    evaluation = svc.start_evaluation(
        policies="expert", scenarios="bilateral", seeds=3, enqueue=False
    )
    real = svc.evaluation_seal_if_done
    monkeypatch.setattr(svc, "evaluation_seal_if_done", lambda **kw: None)  # died sealing
    svc.evaluation_execute(evaluation_id=evaluation.pk, lane="rule")
    monkeypatch.setattr(svc, "evaluation_seal_if_done", real)
    old = timezone.now() - timedelta(hours=1)
    Evaluation.objects.filter(pk=evaluation.pk).update(heartbeat_at=old)
    assert evaluation.parts.get().status == "finished"
    sent = []
    monkeypatch.setattr(dispatch, "_local_runner", lambda: RecordingRunner(sent))
    with (
        override_settings(TASK_RUNNER="thread"),
        django_capture_on_commit_callbacks(execute=True),
    ):
        reconcile(stall_s=60)
    assert [(args, queue) for _, args, queue in sent] == [((evaluation.pk,), "cpu")]
    done = svc.evaluation_execute(evaluation_id=evaluation.pk)  # the task sent: no lane
    assert done.status == "finished" and len(done.outcomes) == 3


def _reconcile_recording(monkeypatch, capture) -> tuple[object, list]:
    sent: list = []
    monkeypatch.setattr(dispatch, "_local_runner", lambda: RecordingRunner(sent))
    with override_settings(TASK_RUNNER="thread"), capture(execute=True):
        done = reconcile(stall_s=60)
    return done, sent


@pytest.mark.django_db
def test_a_dead_lane_is_resumed_while_the_other_lane_still_plays(
    db, model_folder, monkeypatch, django_capture_on_commit_callbacks
) -> None:
    """Before: the run's heartbeat, kept fresh by the model lane, hid the dead rule lane
    until the model lane ended. After: each lane is judged by its own heartbeat."""
    evaluation = svc.start_evaluation(
        policies="expert", scenarios="bilateral", suppliers=f"hardball,llm:{model_folder}",
        seeds=2, enqueue=False,
    )  # fmt: skip
    now, old = timezone.now(), timezone.now() - timedelta(hours=1)
    Evaluation.objects.filter(pk=evaluation.pk).update(
        status=EvaluationStatus.RUNNING, started_at=old, heartbeat_at=now, created_at=old
    )
    parts = EvaluationPart.objects.filter(evaluation=evaluation)
    parts.filter(lane="rule").update(status=EvaluationStatus.RUNNING, heartbeat_at=old)
    parts.filter(lane="llm").update(status=EvaluationStatus.RUNNING, heartbeat_at=now)
    done, sent = _reconcile_recording(monkeypatch, django_capture_on_commit_callbacks)
    assert [(args, queue) for _, args, queue in sent] == [((evaluation.pk, "rule"), "cpu")]
    assert done.evaluations_restarted == [evaluation.pk]
    rule, llm = parts.get(lane="rule"), parts.get(lane="llm")
    assert rule.status == "queued" and rule.heartbeat_at > old  # claimed: not sent twice
    assert (llm.status, llm.heartbeat_at) == ("running", now)  # the live lane: untouched
    assert Evaluation.objects.get(pk=evaluation.pk).status == "running"
    # a second reconciler within the stall period sends nothing more
    assert _reconcile_recording(monkeypatch, django_capture_on_commit_callbacks)[1] == []


@pytest.mark.django_db
def test_a_resumed_run_reports_its_wall_time_from_its_first_start(
    db, monkeypatch, django_capture_on_commit_callbacks
) -> None:
    """Before: a run the reconciler resumed was queued again, and its next start reset
    started_at, so ``seconds`` counted from the restart. After: the first start stands
    (wall time: first start to seal), and each lane adds up only its own play time."""
    monkeypatch.setattr(svc, "FLUSH_INTERVAL_S", 0.0)
    evaluation = svc.start_evaluation(
        policies="expert,random", scenarios="bilateral", seeds=50, enqueue=False
    )
    with killed_after_stores(monkeypatch, 2):
        svc.evaluation_execute(evaluation_id=evaluation.pk)
    played_first = EvaluationPart.objects.values_list("seconds", flat=True).get()
    first_start = timezone.now() - timedelta(seconds=300)  # it died 5 minutes ago
    old = timezone.now() - timedelta(hours=1)
    Evaluation.objects.filter(pk=evaluation.pk).update(started_at=first_start, heartbeat_at=old)
    EvaluationPart.objects.filter(evaluation=evaluation).update(heartbeat_at=old)
    _, sent = _reconcile_recording(monkeypatch, django_capture_on_commit_callbacks)
    assert [args for _, args, _ in sent] == [(evaluation.pk, "rule")]
    done = svc.evaluation_execute(evaluation_id=evaluation.pk, lane="rule")
    assert done.status == "finished" and done.started_at == first_start
    wall = (done.finished_at - first_start).total_seconds()
    assert 300 <= done.seconds <= wall + 1
    part = EvaluationPart.objects.get(evaluation=evaluation)
    assert 0 < part.seconds < 300  # the lane's own play, both attempts, not the downtime
    assert part.seconds >= played_first  # the first attempt's play is counted too


@pytest.mark.django_db
def test_pieces_are_stored_compactly_and_an_ended_lane_keeps_one(db, monkeypatch) -> None:
    """Before: one JSON row list per store (about 260 bytes an episode as text, more as
    jsonb), kept until the seal. After: deflated records, and an ended lane's pieces
    folded into one; the outcomes read back equal."""
    monkeypatch.setattr(svc, "FLUSH_INTERVAL_S", 0.0)
    monkeypatch.setattr(svc, "evaluation_seal_if_done", lambda **kw: None)  # look before
    evaluation = svc.start_evaluation(
        policies="expert,random,always_accept", scenarios="bilateral", seeds=60, enqueue=False
    )
    stores = []
    real = svc._Lane.flush

    def counting(self) -> None:
        stores.append(len(self.pending))
        real(self)

    monkeypatch.setattr(svc._Lane, "flush", counting)
    svc.evaluation_execute(evaluation_id=evaluation.pk, lane="rule")
    assert sum(1 for n in stores if n) > 1  # it stored as it went
    (piece,) = EvaluationPiece.objects.filter(evaluation=evaluation)
    assert piece.episodes == evaluation.episodes == 180
    assert len(unpack_outcomes(piece.data)) == 180  # each once
    assert len(bytes(piece.data)) / piece.episodes < 60
    spec = svc._pinned_spec(evaluation)
    assert combine(spec, svc._stored(evaluation.pk)) == list(evaluate(spec).outcomes)


@pytest.mark.django_db
def test_a_person_s_llm_episodes_are_limited(db, model_folder, user_with_role) -> None:
    params = {"policies": "expert", "scenarios": "bilateral", "seeds": 3, "enqueue": False}
    params["suppliers"] = f"hardball,llm:{model_folder}"
    with override_settings(LLM_MAX_SWEEP_CELLS_PER_USER=2):
        with pytest.raises(QuotaExceeded, match="3 episodes that call a language model"):
            svc.start_evaluation(**params, user=user_with_role("ops"))
        assert Evaluation.objects.count() == 0
        svc.start_evaluation(**params)  # the command line is not limited
    assert Evaluation.objects.get().llm_episodes == 3
