"""``manage.py train sft|grpo``: train a language-model buyer here, in this process.

The same service as the Training page's gpu task (procurement.services.training); a
progress bar instead of the live curves. Rerun with the same ``--name`` after a failure,
a cancel or Ctrl-C: the run resumes from its last checkpoint."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError
from tqdm import tqdm

from procurement.errors import ApplicationError
from procurement.models import GrpoContinuation, TrainingKind, TrainingRun, TrainingStatus
from procurement.services.scenarios import presets_seed
from procurement.services.training import (
    DEFAULT_LEARNING_RATE,
    TrainingRequest,
    training_create,
    training_execute,
    training_requeue,
)


class Command(BaseCommand):
    help = "Train an LLM buyer (SFT or GRPO) from stored episodes; register it as a policy."

    def add_arguments(self, parser) -> None:
        parser.add_argument("kind", choices=TrainingKind.values)
        parser.add_argument("--name", required=True, help="the run's and the policy's name")
        parser.add_argument("--base", default="smollm2", help="smollm2 or an llm policy's name")
        parser.add_argument("--scenarios", required=True, help="comma-separated names")
        parser.add_argument("--episodes", type=int, required=True, help="episodes to learn from")
        parser.add_argument("--source-policy", default="expert", help="who played them")
        parser.add_argument("--min-score", type=float, default=None)
        parser.add_argument("--max-steps", type=int, default=20)
        parser.add_argument("--learning-rate", type=float, default=DEFAULT_LEARNING_RATE)
        parser.add_argument("--lora", action="store_true", help="LoRA adapters, merged at the end")
        parser.add_argument(
            "--continuation",
            choices=GrpoContinuation.values,
            default=GrpoContinuation.EXPERT,
            help="GRPO: who plays an episode's rest after a sampled reply (its score is the "
            "reply's reward): the expert, or the model itself (whole-episode rollouts)",
        )

    def handle(self, *args, kind: str, name: str, **opts) -> None:
        presets_seed()
        run = TrainingRun.objects.filter(name=name).first()
        if run is None:
            run = self._create(kind, name, opts)
            self.stdout.write(f"Training run '{name}': {run.kind} from {run.base}.")
        else:
            run = self._resume(run, kind, opts["base"])
        bar = tqdm(total=run.max_steps, initial=run.step, unit="step", file=self.stderr._out)

        def progress(step: int, max_steps: int, metrics: dict[str, float]) -> None:
            bar.update(max(0, step - bar.n))
            shown = {k: f"{v:.4g}" for k, v in metrics.items() if k in SHOWN}
            bar.set_postfix(shown, refresh=False)

        try:
            run = training_execute(run_id=run.pk, progress=progress)
        finally:
            bar.close()
        if run.status == TrainingStatus.RUNNING:
            raise CommandError(
                f"--name: '{run.name}' is being trained by another process (a worker, or "
                "another train command); cancel it first, or wait."
            )
        if run.status == TrainingStatus.FINISHED:
            self.stdout.write(
                f"Finished {run.step} steps; policy '{run.policy.name}' (model {run.policy.model})."
            )
        elif run.status == TrainingStatus.CANCELLED:
            self.stdout.write(f"Cancelled at step {run.step}; rerun to resume.")
        else:
            raise CommandError(f"Training failed: {run.error} (rerun to resume)")

    def _create(self, kind: str, name: str, opts: dict) -> TrainingRun:
        request = TrainingRequest(
            kind=kind,
            base=opts["base"],
            scenarios=[s.strip() for s in opts["scenarios"].split(",") if s.strip()],
            episodes=opts["episodes"],
            name=name,
            source_policy=opts["source_policy"],
            min_score=opts["min_score"],
            max_steps=opts["max_steps"],
            learning_rate=opts["learning_rate"],
            lora=opts["lora"],
            continuation=opts["continuation"],
        )
        try:
            return training_create(request=request, enqueue=False)
        except ApplicationError as exc:
            field = exc.extra.get("field")
            option = f"--{field.replace('_', '-')}: " if field and field != "kind" else ""
            raise CommandError(f"{option}{exc.message}") from None

    def _resume(self, run: TrainingRun, kind: str, base: str) -> TrainingRun:
        """The run of this name again: resumed unless it finished or differs."""
        if run.status == TrainingStatus.FINISHED:
            raise CommandError(
                f"--name: '{run.name}' finished already (its policy holds the name)."
            )
        if (run.kind, run.base) != (kind, base):
            raise CommandError(
                f"--name: '{run.name}' is a {run.kind} run from {run.base}; "
                "resume it with the same kind and --base, or pick another name."
            )
        if run.status in (TrainingStatus.FAILED, TrainingStatus.CANCELLED):
            run = training_requeue(run=run, enqueue=False)
        self.stdout.write(f"Resuming '{run.name}' from step {run.step} (its last checkpoint).")
        return run


SHOWN = ("loss", "reward", "learning_rate")
