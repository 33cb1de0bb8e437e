"""run_episode and run_sweep, as an analyst or ops person would type them."""

from __future__ import annotations

import io

import pytest
from django.core.management import CommandError, call_command
from django.test import override_settings

from negotiation import run_episode
from procurement.models import Episode, Sweep


def _call(*args: str) -> str:
    out = io.StringIO()
    call_command(*args, stdout=out)
    return out.getvalue()


@pytest.mark.django_db
def test_run_episode_prints_a_transcript_and_the_engine_metrics() -> None:
    text = _call(
        "run_episode", "--scenario", "medium_adversarial", "--policy", "expert", "--seed", "7"
    )
    expected = run_episode("medium_adversarial", "expert", 7)
    assert "scenario=medium_adversarial" in text and "policy=expert" in text
    assert f"{expected.score:.4f}" in text
    assert "negotiate" in text and "buyer_share" in text
    assert Episode.objects.count() == 0  # printing only, unless --save


@pytest.mark.django_db
def test_run_episode_save_stores_the_episode_with_its_decisions() -> None:
    text = _call("run_episode", "--scenario", "easy_negotiation", "--seed", "2", "--save")
    episode = Episode.objects.get()
    assert f"Stored episode #{episode.pk}" in text
    assert episode.status == "finished" and episode.decisions.count() == episode.steps
    assert episode.score == pytest.approx(run_episode("easy_negotiation", "expert", 2).score)


@pytest.mark.django_db
def test_run_episode_unknown_scenario_is_a_clear_error() -> None:
    with pytest.raises(CommandError, match="Unknown scenario 'nope'"):
        _call("run_episode", "--scenario", "nope")


@pytest.mark.django_db(transaction=True)
@override_settings(TASK_RUNNER="thread")
def test_run_sweep_shows_progress_then_a_leaderboard() -> None:
    text = _call(
        "run_sweep",
        "--scenarios",
        "easy_negotiation",
        "--policies",
        "expert,always_accept",
        "--seeds",
        "3",
    )
    sweep = Sweep.objects.get()
    assert sweep.status == "finished" and sweep.done_cells == 6
    assert f"Sweep #{sweep.pk}: 6 episodes on in-process worker." in text
    assert "6/6" in text  # the progress bar's last state
    rows = [line.split() for line in text.splitlines() if line.startswith("easy_negotiation")]
    assert [r[1] for r in rows] == ["expert", "always_accept"]  # best mean score first
    assert all(r[2] == "3" for r in rows)


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--scenarios", "nope", "--policies", "expert", "--seeds", "2"], "Unknown scenario"),
        (["--scenarios", "hard_arena", "--policies", "magic", "--seeds", "2"], "Unknown policy"),
        (
            ["--scenarios", "hard_arena", "--policies", "expert", "--seeds", "0"],
            "between 1 and 10000",
        ),
    ],
)
def test_run_sweep_bad_arguments_are_clear_errors_and_create_nothing(args, message) -> None:
    with pytest.raises(CommandError, match=message):
        _call("run_sweep", *args)
    assert Sweep.objects.count() == 0
