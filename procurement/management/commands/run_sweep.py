import time

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError
from tqdm import tqdm

from procurement.limits import validate_sweep_grid
from procurement.management.arguments import option_error, positive_seconds
from procurement.models import PolicyConfig, Scenario, Sweep
from procurement.models.status import TERMINAL_STATUSES
from procurement.services.scenarios import presets_seed
from procurement.services.sweeps import sweep_create
from procurement.tables import format_leaderboard

NAME_LENGTH = Sweep._meta.get_field("name").max_length


class Command(BaseCommand):
    help = "Run scenarios x policies x seeds on the workers, show progress, print a leaderboard."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--scenarios", required=True, help="comma-separated names")
        parser.add_argument("--policies", required=True, help="comma-separated names")
        parser.add_argument("--seeds", type=int, required=True, help="seeds per cell")
        parser.add_argument("--seed-start", type=int, default=0)
        parser.add_argument("--name", default="")
        parser.add_argument(
            "--timeout", type=positive_seconds, default=3600, help="seconds to wait"
        )

    def handle(self, *args, scenarios, policies, seeds, seed_start, name, timeout, **opts):
        scenario_names, policy_names = _names(scenarios), _names(policies)
        # Every argument is checked before anything is written (presets included).
        if len(name) > NAME_LENGTH:
            raise CommandError(f"--name: at most {NAME_LENGTH} characters.")
        try:
            validate_sweep_grid(
                scenarios=len(scenario_names),
                policies=len(policy_names),
                seeds=seeds,
                seed_start=seed_start,
            )
        except ValidationError as exc:
            raise option_error(exc) from None
        presets_seed()
        scenario_objs = self._lookup(Scenario, scenario_names, "scenario")
        policy_objs = self._lookup(PolicyConfig, policy_names, "policy")
        sweep = sweep_create(
            scenarios=scenario_objs,
            policies=policy_objs,
            seeds=seeds,
            seed_start=seed_start,
            name=name or f"cli {scenarios} x {policies} x {seeds}"[:NAME_LENGTH],
        )
        where = "in-process worker" if settings.TASK_RUNNER == "thread" else "Celery workers"
        self.stdout.write(f"Sweep #{sweep.pk}: {sweep.total_cells} episodes on {where}.")
        sweep = self._wait(sweep, timeout)
        self.stdout.write(
            f"Sweep #{sweep.pk} {sweep.status}: {sweep.done_cells} done, "
            f"{sweep.failed_cells} failed."
        )
        self.stdout.write(format_leaderboard(sweep.summary.get("leaderboard", [])))

    def _lookup(self, model, wanted: list[str], label: str) -> list:
        found = {o.name: o for o in model.objects.filter(name__in=wanted)}
        missing = [n for n in wanted if n not in found]
        if missing or not wanted:
            known = ", ".join(model.objects.values_list("name", flat=True))
            raise CommandError(
                f"Unknown {label}(s): {', '.join(missing) or '(none)'}. Known: {known}."
            )
        return [found[n] for n in wanted]

    def _wait(self, sweep: Sweep, timeout: float) -> Sweep:
        deadline = time.monotonic() + timeout
        with tqdm(total=sweep.total_cells, unit="ep", file=self.stdout) as bar:
            while True:
                sweep.refresh_from_db()
                bar.n = sweep.done_cells + sweep.failed_cells
                bar.refresh()
                if sweep.status in TERMINAL_STATUSES:
                    return sweep
                if time.monotonic() > deadline:
                    raise CommandError(f"Sweep #{sweep.pk} still {sweep.status} after {timeout}s.")
                time.sleep(0.5)


def _names(text: str) -> list[str]:
    """Comma-separated names, blanks and repeats dropped, in the order given."""
    return list(dict.fromkeys(n.strip() for n in text.split(",") if n.strip()))
