"""Writes for training runs: check a request, create the run, train it on a worker, and
register the trained model as an ``llm`` policy that episodes, sweeps and evaluations can
pick at once.

The training itself is ``negotiation.training`` (Django-free): this module picks the
stored episodes, hands them over, and keeps the run's row (progress, metrics, log tail,
status) and its live stream up to date through the library's hooks. A request the
service refuses creates nothing: every check runs before the first write.
"""

from __future__ import annotations

import logging
import math
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import validate_slug
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from negotiation.llm import vllm_backend
from negotiation.llm.models import DEFAULT_ALIASES, resolve_model
from negotiation.policies.params import LLMParams
from negotiation.training import TrainHooks, TrainJob, chat_examples, run_training
from procurement import dispatch
from procurement.errors import ApplicationError, Conflict
from procurement.models import (
    GrpoContinuation,
    PolicyConfig,
    Scenario,
    TrainingKind,
    TrainingRun,
    TrainingStatus,
)
from procurement.run_plan import GPU_QUEUE
from procurement.selectors.episodes import unknown_names
from procurement.selectors.training import (
    episode_sources,
    trainable_base,
    training_source_episodes,
)
from procurement.services import live
from procurement.services.faults import describe, is_infrastructure_error
from procurement.services.heartbeat import Heartbeat
from procurement.services.policies import policy_create
from procurement.services.run_status import cancel_run

log = logging.getLogger(__name__)

SHIPPED_BASE = "smollm2"
DEFAULT_LEARNING_RATE = 5e-5
FLUSH_INTERVAL_S = 1.0  # store and publish progress at most once a second
STOP_POLL_S = 1.0  # read the cancel flag at most once a second
LOG_LINES = 40  # the log tail a run keeps
LOGGED = ("loss", "reward", "learning_rate", "grad_norm", "seconds")  # per step, in the log
VLLM_SUFFIX = "-vllm"  # the trained model's second policy, served by vLLM where it is installed


class TrainingRequestError(ApplicationError):
    """A training request that cannot run; ``extra["field"]`` names the field at fault."""

    def __init__(self, field_name: str, message: str) -> None:
        super().__init__(message, {"field": field_name})


class TrainingNameTaken(Conflict):
    """The name is a training run's or a policy's already."""

    def __init__(self, message: str) -> None:
        super().__init__(message, {"field": "name"})


@dataclass(frozen=True)
class TrainingRequest:
    kind: str
    base: str
    scenarios: Sequence[str]
    episodes: int
    name: str
    source_policy: str = "expert"
    min_score: float | None = None
    max_steps: int = 20
    learning_rate: float = DEFAULT_LEARNING_RATE
    lora: bool = False
    continuation: str = GrpoContinuation.EXPERT


@dataclass
class _Checked:
    base_model: str
    play_params: dict[str, Any]
    episode_ids: list[int] = field(default_factory=list)


def training_output_dir(name: str) -> Path:
    return Path(settings.DATA_DIR) / "training" / name


def _check(request: TrainingRequest) -> _Checked:
    """Every rule a request must meet, in the order a person fixes them; the first
    broken one is raised (TrainingRequestError / TrainingNameTaken). Reads only."""
    if request.kind not in TrainingKind.values:
        raise TrainingRequestError("kind", f"Unknown kind '{request.kind}'; use sft or grpo.")
    try:
        validate_slug(request.name)
    except ValidationError:
        raise TrainingRequestError(
            "name", "A name is letters, digits, '-' and '_' (it becomes the policy's name)."
        ) from None
    if TrainingRun.objects.filter(name=request.name).exists():
        raise TrainingNameTaken(f"A training run is called '{request.name}' already.")
    if PolicyConfig.objects.filter(name=request.name).exists():
        raise TrainingNameTaken(f"A policy is called '{request.name}' already.")
    base_model, play_params = _base(request.base)
    scenarios = [s for s in dict.fromkeys(request.scenarios) if s]
    if not scenarios:
        raise TrainingRequestError("scenarios", "Name at least one scenario.")
    unknown = [s for s in scenarios if not Scenario.objects.filter(name=s).exists()]
    if unknown:
        raise TrainingRequestError("scenarios", f"Unknown scenario(s): {', '.join(unknown)}.")
    if request.continuation not in GrpoContinuation.values:
        raise TrainingRequestError(
            "continuation",
            f"Unknown continuation '{request.continuation}'; use "
            f"{' or '.join(GrpoContinuation.values)}.",
        )
    if request.kind != TrainingKind.GRPO and request.continuation != GrpoContinuation.EXPERT:
        raise TrainingRequestError("continuation", "A continuation is a GRPO setting.")
    if unknown_names("policy", [request.source_policy]):
        raise TrainingRequestError("source_policy", f"Unknown policy '{request.source_policy}'.")
    _check_numbers(request)
    found = training_source_episodes(
        scenarios=scenarios,
        source_policy=request.source_policy,
        min_score=request.min_score,
        count=request.episodes,
    )
    if not found:
        least = "" if request.min_score is None else f" scoring at least {request.min_score}"
        raise TrainingRequestError(
            "episodes",
            f"No stored episodes of {', '.join(scenarios)} played by "
            f"'{request.source_policy}'{least} with rule suppliers: run some first "
            "(a sweep), or widen the filter.",
        )
    return _Checked(base_model, play_params, [e.pk for e in found])


def _base(base: str) -> tuple[str, dict[str, Any]]:
    """The model folder (or the shipped model's alias) a base name stands for, and the
    llm params it plays with."""
    if base.strip().lower() in DEFAULT_ALIASES - {""}:
        return SHIPPED_BASE, {}
    policy = trainable_base(base)
    if policy is None:
        raise TrainingRequestError(
            "base",
            f"Unknown base '{base}': use '{SHIPPED_BASE}' or the name of an llm policy "
            "with the transformers backend (a trained model).",
        )
    if policy.params.get("mode", "free") != "free":
        raise TrainingRequestError(
            "base", f"'{base}' plays in narrator mode; training teaches the free mode."
        )
    return policy.model, dict(policy.params)


def _check_numbers(request: TrainingRequest) -> None:
    bounds = (
        ("episodes", request.episodes, settings.TRAINING_MAX_EPISODES),
        ("max_steps", request.max_steps, settings.TRAINING_MAX_STEPS),
    )
    for name, value, most in bounds:
        if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= most:
            raise TrainingRequestError(name, f"A whole number from 1 to {most}; got {value!r}.")
    score = request.min_score
    if score is not None and not (math.isfinite(score) and 0 <= score <= 1):
        raise TrainingRequestError("min_score", f"A number from 0 to 1; got {score!r}.")
    rate = request.learning_rate
    if not (math.isfinite(rate) and 0 < rate < 1):
        raise TrainingRequestError("learning_rate", f"A number above 0 and below 1; got {rate!r}.")


@transaction.atomic
def training_create(*, request: TrainingRequest, user=None, enqueue: bool = True) -> TrainingRun:
    """Check the request, create the queued run (its episodes picked now, so a resumed
    run learns from the same data) and, with ``enqueue``, send it to the gpu queue."""
    checked = _check(request)
    run = TrainingRun.objects.create(
        name=request.name,
        kind=request.kind,
        base=request.base,
        base_model=checked.base_model,
        play_params=checked.play_params,
        scenarios=list(dict.fromkeys(request.scenarios)),
        source_policy=request.source_policy,
        min_score=request.min_score,
        episodes=request.episodes,
        source_episode_ids=checked.episode_ids,
        max_steps=request.max_steps,
        learning_rate=request.learning_rate,
        lora=request.lora,
        continuation=request.continuation,
        output_dir=str(training_output_dir(request.name)),
        created_by=user,
    )
    if enqueue:
        dispatch.enqueue(dispatch.RUN_TRAINING, run.pk, queue=GPU_QUEUE)
    return run


def training_requeue(*, run: TrainingRun, enqueue: bool = True) -> TrainingRun:
    """Queue a failed or cancelled run again: it resumes from its last checkpoint.
    Conflict when it finished (its name is a policy now) or is still queued or running."""
    reopened = TrainingRun.objects.filter(
        pk=run.pk, status__in=[TrainingStatus.FAILED, TrainingStatus.CANCELLED]
    ).update(status=TrainingStatus.QUEUED, error="", finished_at=None)
    run.refresh_from_db()
    if not reopened:
        raise Conflict(
            f"Training run '{run.name}' is {run.status}; only failed or cancelled runs resume."
        )
    if enqueue:
        dispatch.enqueue(dispatch.RUN_TRAINING, run.pk, queue=GPU_QUEUE)
    live.publish_training_progress(run, [])
    return run


def training_cancel(*, run: TrainingRun) -> TrainingRun:
    """Cancel a queued or running run: the trainer stops at its next step, saving a
    checkpoint to resume from. Conflict when the run is over."""
    if not cancel_run(run):
        raise Conflict(f"Training run is {run.status}; only queued or running ones cancel.")
    live.publish_training_progress(run, [])
    return run


Progress = Callable[[int, int, dict[str, float]], None]  # (step, max_steps, metrics)


class _RunHooks:
    """The library's hooks for one run: metrics and log lines kept in memory, stored and
    published at most once a second (and at the end); the cancel flag read likewise."""

    def __init__(self, run: TrainingRun, progress: Progress | None) -> None:
        self.run = run
        self.progress = progress
        self.unsent: list[dict[str, Any]] = []
        self.lines: deque[str] = deque(run.log_tail.splitlines(), maxlen=LOG_LINES)
        self.last_flush = 0.0
        self.last_poll = 0.0
        self.stopped = False

    def hooks(self) -> TrainHooks:
        return TrainHooks(
            on_log=self.on_log, should_stop=self.should_stop, on_checkpoint=self.on_checkpoint
        )

    def say(self, line: str) -> None:
        self.lines.append(f"{timezone.now():%H:%M:%S} {line}")

    def on_log(self, step: int, metrics: dict[str, float]) -> None:
        point = {"step": step, **{k: v for k, v in metrics.items() if _finite(v)}}
        self.run.metrics = [p for p in self.run.metrics if p.get("step") != step] + [point]
        self.run.step = max(self.run.step, step)
        self.unsent.append(point)
        shown = ", ".join(f"{k} {point[k]:.4g}" for k in LOGGED if k in point)
        self.say(f"step {step}/{self.run.max_steps}: {shown}")
        if self.progress is not None:
            self.progress(step, self.run.max_steps, metrics)
        if time.monotonic() - self.last_flush >= FLUSH_INTERVAL_S:
            self.flush()

    def on_checkpoint(self, path: Path) -> None:
        self.say(f"checkpoint saved: {Path(path).name}")
        self.flush()

    def should_stop(self) -> bool:
        if not self.stopped and time.monotonic() - self.last_poll >= STOP_POLL_S:
            self.last_poll = time.monotonic()
            status = TrainingRun.objects.filter(pk=self.run.pk).values_list("status", flat=True)
            self.stopped = status.first() == TrainingStatus.CANCELLED
            if self.stopped:
                self.say("cancel asked: saving a checkpoint and stopping")
        return self.stopped

    def flush(self, **fields: Any) -> None:
        """Store progress (and ``fields``) and publish the points not yet sent."""
        self.last_flush = time.monotonic()
        self.run.log_tail = "\n".join(self.lines)
        values = {
            "step": self.run.step,
            "metrics": self.run.metrics,
            "log_tail": self.run.log_tail,
            "heartbeat_at": timezone.now(),
            **fields,
        }
        for name, value in values.items():
            setattr(self.run, name, value)
        TrainingRun.objects.filter(pk=self.run.pk).update(**values)
        points, self.unsent = self.unsent, []
        live.publish_training_progress(self.run, points)


def training_execute(*, run_id: int, progress: Progress | None = None) -> TrainingRun:
    """Train a queued run (the gpu task's body, and ``manage.py train``), resuming from
    the last checkpoint in its folder; register the model as a policy when it succeeds.
    A run another process is training is returned as it is (still running)."""
    # One trainer per run: a queued run, or a running one whose trainer stopped beating
    # (a second delivery of the task while the first trains finds its heartbeat fresh).
    stale = timezone.now() - timedelta(seconds=settings.RUN_STALL_SECONDS)
    claimable = Q(status=TrainingStatus.QUEUED) | Q(
        Q(heartbeat_at__lt=stale) | Q(heartbeat_at__isnull=True), status=TrainingStatus.RUNNING
    )
    now = timezone.now()
    started = TrainingRun.objects.filter(claimable, pk=run_id).update(
        status=TrainingStatus.RUNNING, started_at=now, heartbeat_at=now
    )
    run = TrainingRun.objects.get(pk=run_id)
    if not started:  # cancelled while it waited, over already, or training elsewhere
        return run
    hooks = _RunHooks(run, progress)
    hooks.say(f"started: {run.kind} from {run.base}, {len(run.source_episode_ids)} episodes")
    hooks.flush()  # not the status: a cancel since the claim stands
    try:
        # The trainer's steps can be minutes apart on a CPU: beat while it works, so the
        # reconciler resumes the run only when this process is gone.
        with Heartbeat(lambda: _touch(run.pk)):
            outcome = run_training(_job(run), hooks.hooks())
    except Exception as exc:
        if is_infrastructure_error(exc):
            _release(run.pk)
            raise  # the task retries; the trainer resumes from its checkpoint
        log.exception("training run %s failed", run.pk)
        hooks.say(f"failed: {describe(exc, 500)}")
        hooks.flush(status=TrainingStatus.FAILED, error=describe(exc), finished_at=timezone.now())
        return run
    if outcome.cancelled:
        hooks.say(f"cancelled at step {outcome.steps}; rerun with the same name to resume")
        hooks.flush(status=TrainingStatus.CANCELLED, finished_at=run.finished_at or timezone.now())
        return run
    return _succeed(run, hooks, outcome)


def _release(run_id: int) -> None:
    """Queue the run again for the retry to take (best effort: the database may be what
    failed; then the reconciler takes it once the heartbeat is old)."""
    try:
        TrainingRun.objects.filter(pk=run_id, status=TrainingStatus.RUNNING).update(
            status=TrainingStatus.QUEUED
        )
    except Exception:
        log.warning("could not queue training run %s again", run_id, exc_info=True)


def _touch(run_id: int) -> None:
    TrainingRun.objects.filter(pk=run_id).update(heartbeat_at=timezone.now())


def _job(run: TrainingRun) -> TrainJob:
    summary = {
        "source_policy": run.source_policy,
        "min_score": run.min_score,
        "scenarios": run.scenarios,
        "episode_ids": run.source_episode_ids,
    }
    play = LLMParams.model_validate(run.play_params)
    job = TrainJob(
        kind=run.kind,
        base_model=resolve_model(run.base_model),
        output_dir=Path(run.output_dir),
        max_steps=run.max_steps,
        learning_rate=run.learning_rate,
        lora=run.lora,
        continuation=run.continuation,
        save_every=settings.TRAINING_SAVE_EVERY,
        max_prompt_chars=play.max_prompt_chars,
        max_completion_tokens=play.max_tokens,
        data_summary=summary,
    )
    sources = episode_sources(run.source_episode_ids)
    if run.kind == TrainingKind.SFT:
        job.examples = chat_examples(
            sources, max_prompt_chars=play.max_prompt_chars, max_tokens=play.max_tokens
        )
    else:  # GRPO samples its groups in the states the stored episodes reached
        job.states = sources
    return job


def _succeed(run: TrainingRun, hooks: _RunHooks, outcome) -> TrainingRun:
    lineage = {
        **outcome.lineage,
        "run": run.name,
        "base": run.base,
        "base_lineage": _base_lineage(run.base),
    }
    with transaction.atomic():
        policy = policy_create(
            name=run.name,
            policy="llm",
            params=run.play_params,
            backend="transformers",
            model=str(outcome.model_dir),
            description=_description(run, outcome),
        )
        hooks.say(f"finished: {outcome.steps} steps; registered as policy '{policy.name}'")
        twin = _register_vllm_twin(run, outcome, hooks)
        lineage["policies"] = [policy.name, *([twin.name] if twin else [])]
        hooks.flush(
            status=TrainingStatus.FINISHED,
            policy=policy,
            lineage=lineage,
            finished_at=timezone.now(),
        )
    return run


def _register_vllm_twin(run: TrainingRun, outcome, hooks: _RunHooks) -> PolicyConfig | None:
    """The same model as a second ``llm`` policy on the vllm backend (NAME-vllm), where
    the worker that trained it can import vLLM (a GPU worker with requirements/gpu.txt):
    vLLM batches many episodes' decisions at once on a GPU. None where vLLM is not
    installed, or (said in the log) where that name is taken or too long."""
    if not vllm_backend.installed():
        return None
    name = f"{run.name}{VLLM_SUFFIX}"
    longest = PolicyConfig._meta.get_field("name").max_length
    if len(name) > longest or PolicyConfig.objects.filter(name=name).exists():
        why = "taken" if len(name) <= longest else f"over {longest} characters"
        hooks.say(f"vLLM is installed, but no vllm policy: the name '{name}' is {why}")
        return None
    twin = policy_create(
        name=name,
        policy="llm",
        params=run.play_params,
        backend="vllm",
        model=str(outcome.model_dir),
        description=f"{_description(run, outcome)} Served by vLLM.",
    )
    hooks.say(f"vLLM is installed: also registered as policy '{twin.name}' (backend vllm)")
    return twin


def _base_lineage(base: str) -> dict[str, Any] | None:
    """The lineage of the run that trained ``base`` (None: the shipped model)."""
    parent = TrainingRun.objects.filter(name=base).values_list("lineage", flat=True).first()
    return parent or None


def _description(run: TrainingRun, outcome) -> str:
    shown = ", ".join(f"{k} {v:.4g}" for k, v in outcome.metrics.items() if _finite(v))
    return (
        f"Trained here ({run.kind.upper()}, training run '{run.name}'): base {run.base}, "
        f"{len(run.source_episode_ids)} episodes of {', '.join(run.scenarios)} played by "
        f"{run.source_policy}, {outcome.steps} steps{'; LoRA' if run.lora else ''}. "
        f"Last metrics: {shown or 'none'}."
    )


def _finite(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
