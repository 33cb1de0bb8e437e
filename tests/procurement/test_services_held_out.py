"""Held-out worlds (services/held_out.py): a world a person played in a seat before a
sealed evaluation covered it is listed as exposed on that evaluation; a seat's chosen
seed and a sealed evaluation created at the same instant cannot both miss each other
(PostgreSQL: the advisory lock orders them)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import pytest
from django.core.exceptions import ValidationError
from django.db import connection

from procurement.models import Episode, Evaluation, PolicyConfig, Scenario
from procurement.selectors.evaluations import OUTCOME_FIELDS, evaluation_payload
from procurement.services import evaluations as evaluations_svc
from procurement.services import held_out, supplier_seat

SEED = 12


@pytest.fixture(autouse=True)
def _world_key(settings) -> None:
    settings.WORLD_KEY = "the test server's world key"


def _seat(user, seed: int | None) -> Episode:
    return supplier_seat.supplier_seat_start(
        scenario=Scenario.objects.get(name="bilateral"),
        policy=PolicyConfig.objects.get(name="expert"),
        user=user,
        seed=seed,
    )


def _sealed(**over: Any) -> Evaluation:
    params = {"policies": "expert", "scenarios": "bilateral", "seeds": 5, "seed_start": 10}
    return evaluations_svc.start_evaluation(**{**params, **over}, sealed=True, enqueue=False)


@pytest.mark.django_db
def test_worlds_played_in_a_seat_before_sealing_are_listed_as_exposed(
    seeded, user_with_role, client, api_client_for
) -> None:
    analyst = user_with_role("analyst")
    inside = [_seat(analyst, SEED), _seat(analyst, SEED), _seat(analyst, 14)]
    _seat(analyst, 9)  # below the range
    public = evaluations_svc.start_evaluation(
        policies="expert", scenarios="bilateral", seeds=5, seed_start=10, enqueue=False
    )
    other_scenario = _sealed(scenarios="bilateral_hardball")
    evaluation = _sealed()
    assert evaluation.exposed == [
        {"scenario": "bilateral", "seed": SEED, "episodes": [inside[0].pk, inside[1].pk]},
        {"scenario": "bilateral", "seed": 14, "episodes": [inside[2].pk]},
    ]
    assert public.exposed == [] and other_scenario.exposed == []
    assert evaluation_payload(evaluation)["exposed"] == evaluation.exposed
    api = api_client_for("analyst").get(f"/api/evaluations/{evaluation.pk}/").json()
    assert api["exposed"] == evaluation.exposed  # and so the JSON download
    client.force_login(user_with_role("ops"))
    page = client.get(f"/evaluations/{evaluation.pk}/").content.decode()
    assert 'id="exposed"' in page and "bilateral seed 12 (2 seat episodes)" in page
    # afterwards the range is held out: a chosen seed in it is refused, nothing created
    with pytest.raises(ValidationError, match=f"sealed evaluation #{evaluation.pk}"):
        _seat(analyst, 13)
    assert Episode.objects.count() == 4


@pytest.mark.django_db(transaction=True)  # no test transaction around it
def test_the_lock_needs_a_transaction() -> None:
    with pytest.raises(RuntimeError, match="transaction"):
        held_out.held_out_lock()


def _in_thread(target: Callable[[], Any], out: dict[str, Any], key: str) -> threading.Thread:
    def run() -> None:
        try:
            out[key] = target()
        except Exception as exc:  # the test reads what each side got
            out[key] = exc
        finally:
            connection.close()

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


def _pausing(monkeypatch, module, name: str) -> tuple[threading.Event, threading.Event]:
    """``module.name`` signals ``reached`` when called, then waits (at most 3 s) for
    ``go``: the caller's transaction stays open there, its check done, nothing written."""
    reached, go = threading.Event(), threading.Event()
    real = getattr(module, name)

    def paused(*args, **kwargs):
        reached.set()
        go.wait(3.0)
        return real(*args, **kwargs)

    monkeypatch.setattr(module, name, paused)
    return reached, go


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("first", ["seat", "evaluation"])
def test_a_seat_and_a_sealed_evaluation_at_once_never_miss_each_other(
    seeded, user_with_role, monkeypatch, first
) -> None:
    """Before: each side's check read before the other committed, so a seat inside the
    range could start while the evaluation listed nothing exposed. After: whichever takes
    the lock first commits first and the other sees it: a seat that came first is listed
    as exposed; an evaluation that came first makes the seat refuse its seed."""
    analyst = user_with_role("analyst")
    out: dict[str, Any] = {}
    if first == "seat":  # paused after its seed was checked, before it is written
        reached, go = _pausing(monkeypatch, supplier_seat, "episode_build")
        a = _in_thread(lambda: _seat(analyst, SEED), out, "seat")
    else:  # paused after its exposure was read, before it is written
        reached, go = _pausing(monkeypatch, evaluations_svc, "_create")
        a = _in_thread(_sealed, out, "evaluation")
    assert reached.wait(10)
    second = "evaluation" if first == "seat" else "seat"
    b = _in_thread(_sealed if second == "evaluation" else lambda: _seat(analyst, SEED), out, second)
    b.join(1.0)
    blocked = b.is_alive()  # waits for the first side's commit
    go.set()
    a.join(20)
    b.join(20)
    assert blocked, "the second side went ahead while the first had checked, not written"
    evaluation = out["evaluation"]
    assert isinstance(evaluation, Evaluation), evaluation
    if first == "seat":
        assert isinstance(out["seat"], Episode), out["seat"]
        assert evaluation.exposed == [
            {"scenario": "bilateral", "seed": SEED, "episodes": [out["seat"].pk]}
        ]
    else:
        assert isinstance(out["seat"], ValidationError), out["seat"]
        assert not Episode.objects.exists() and evaluation.exposed == []


@pytest.mark.django_db
def test_the_leaderboard_is_read_again_without_the_exposed_worlds(
    seeded, user_with_role, client
) -> None:
    """A sealed evaluation with exposed worlds stores its leaderboard on the seeds no
    person saw, each exposed seed dropped for every buyer (still paired), shown beside
    the full one; without exposure there is no second reading."""
    analyst = user_with_role("analyst")
    _seat(analyst, SEED), _seat(analyst, 14)
    evaluation = _sealed(policies="expert,always_accept")
    plain = _sealed(policies="expert,always_accept", scenarios="bilateral_hardball")
    for e in (evaluation, plain):
        evaluations_svc.evaluation_play_lanes(evaluation_id=e.pk)
        e.refresh_from_db()
        assert e.status == "finished", e.error
    assert plain.leaderboard_unexposed == []
    fields = list(OUTCOME_FIELDS)
    rows = [dict(zip(fields, row, strict=True)) for row in evaluation.outcomes]
    unseen = evaluation.leaderboard_unexposed
    assert {r["policy"] for r in unseen} == {"expert", "always_accept"}
    for r in unseen:
        scores = [o["score"] for o in rows if o["policy"] == r["policy"]]
        kept = [
            o["score"] for o in rows if o["policy"] == r["policy"] and o["seed"] not in (SEED, 14)
        ]
        assert r["seeds"] == 3 and r["episodes"] == len(kept) == len(scores) * 3 // 5
        assert r["score"]["mean"] == pytest.approx(sum(kept) / len(kept))
    client.force_login(user_with_role("ops"))
    page = client.get(f"/evaluations/{evaluation.pk}/").content.decode()
    assert 'id="unexposed"' in page and "3 of 5" in page
    assert 'id="unexposed"' not in client.get(f"/evaluations/{plain.pk}/").content.decode()
