"""Reads for training runs: the stored episodes a run learns from, and the payloads the
Training page and its live stream show."""

from __future__ import annotations

from collections.abc import Collection, Iterator
from contextlib import suppress
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from django.conf import settings

from negotiation.training import EpisodeSource
from negotiation.training.report import (
    CURVES_FILE,
    REPORT_DIR,
    RESULTS_FILE,
    ReportError,
    read_report,
)
from procurement.errors import NotFound
from procurement.models import Episode, PolicyConfig, TrainingRun
from procurement.selectors.episodes import buyer_action, episode_decisions, finished_episode_list

SOURCE_SCAN_BATCH = 500


def training_source_episodes(
    *, scenarios: Collection[str], source_policy: str, min_score: float | None, count: int
) -> list[Episode]:
    """The first ``count`` finished episodes (oldest first) of these scenarios played by
    ``source_policy`` that scored at least ``min_score`` and can be replayed from their
    scenario, seed and actions alone: rule suppliers (a language-model supplier would
    need the model again, as in services.datasets) and a public seed (a sealed world is
    drawn under the server's key, not from the seed)."""
    found: list[Episode] = []
    for episode in _candidates(scenarios, source_policy, min_score):
        if not episode.run_plan.suppliers_use_llm:
            found.append(episode)
            if len(found) == count:
                break
    return found


def _candidates(
    scenarios: Collection[str], source_policy: str, min_score: float | None
) -> Iterator[Episode]:
    episodes = finished_episode_list(
        scenarios=scenarios, policies=[source_policy], min_score=min_score
    ).filter(sealed=False)
    return episodes.only("pk", "scenario_snapshot", "policy_snapshot").iterator(
        chunk_size=SOURCE_SCAN_BATCH
    )


def episode_sources(episode_ids: Collection[int]) -> list[EpisodeSource]:
    """The episodes as the training library replays them: scenario config, seed, the
    buyer's actions in step order, score. Deleted episodes are left out."""
    episodes = Episode.objects.filter(pk__in=list(episode_ids)).order_by("pk")
    return [
        EpisodeSource(
            scenario=episode.scenario_snapshot,
            seed=episode.seed,
            actions=[
                buyer_action(a) for a in episode_decisions(episode).values_list("action", flat=True)
            ],
            score=episode.score,
        )
        for episode in episodes
    ]


def trainable_base(name: str) -> PolicyConfig | None:
    """The llm policy (transformers backend, a local model folder) called ``name``: what a
    run may start from besides the shipped model."""
    return PolicyConfig.objects.filter(name=name, policy="llm", backend="transformers").first()


def training_payload(run: TrainingRun) -> dict[str, Any]:
    return {
        "id": run.pk,
        "name": run.name,
        "kind": run.kind,
        "status": run.status,
        "step": run.step,
        "max_steps": run.max_steps,
        "progress": run.progress,
        "error": run.error,
        "log_tail": run.log_tail,
        "policy": run.policy.name if run.policy_id else None,
        "policy_id": run.policy_id,
        # what made the model, once there is one (a run's lineage lists its episodes)
        "lineage": run.lineage if run.is_terminal else None,
    }


def training_snapshot(*, run_id: int) -> tuple[str, dict[str, Any]]:
    """The run's group and its snapshot (every metric so far); NotFound when none."""
    run = TrainingRun.objects.select_related("policy").filter(pk=run_id).first()
    if run is None:
        raise NotFound(f"No training run {run_id}.")
    return run.group_name, {
        "type": "training.snapshot",
        "run": training_payload(run),
        "metrics": run.metrics,
    }


def training_run_list():
    return TrainingRun.objects.select_related("policy", "created_by").defer("metrics", "log_tail")


def training_bench_report() -> dict[str, Any]:
    """The training bench's last report (bench/train.py, under DATA_DIR) for the Training
    page: ``report`` (None when there is none or it cannot be read), ``error`` (why it
    cannot), ``written`` (when) and ``curves`` (whether its curves image exists)."""
    folder = _bench_folder()
    out: dict[str, Any] = {"report": None, "error": "", "written": None, "curves": False}
    try:
        out["report"] = read_report(folder)
    except ReportError as exc:
        out["error"] = str(exc)
    if out["report"] is not None:
        with suppress(OSError):  # replaced or removed since it was read: no time shown
            stamp = (folder / RESULTS_FILE).stat().st_mtime
            out["written"] = datetime.fromtimestamp(stamp, tz=UTC)
        out["curves"] = training_bench_curves() is not None
    return out


def training_bench_curves() -> Path | None:
    """The bench report's curves image, when there is one."""
    path = _bench_folder() / CURVES_FILE
    return path if path.is_file() else None


def _bench_folder() -> Path:
    return Path(settings.DATA_DIR) / REPORT_DIR
