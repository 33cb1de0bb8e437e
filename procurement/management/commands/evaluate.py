from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand

from negotiation.evaluation import format_leaderboard, format_ratings
from procurement.management.arguments import integer, option_error, seed
from procurement.services.evaluations import evaluation_create


class Command(BaseCommand):
    help = (
        "Evaluate rule buyer policies on scenarios x seeds (headless, optionally in parallel): "
        "print and store a leaderboard with bootstrap 95 % CIs and openskill cross-play "
        "ratings. Rule policies only: 'human' and 'llm' cannot run headless."
    )

    def add_arguments(self, parser) -> None:
        parser.add_argument("--policies", required=True, help="comma-separated policy names")
        parser.add_argument(
            "--scenarios", required=True, help="comma-separated scenario names, or 'all' presets"
        )
        parser.add_argument("--seeds", type=integer, required=True, help="seeds per cell")
        parser.add_argument("--seed-start", type=seed, default=0)
        parser.add_argument(
            "--tiers", default="", help="comma-separated curriculum tiers (novice ... master)"
        )
        parser.add_argument("--workers", type=integer, default=1, help="worker processes")
        parser.add_argument(
            "--sealed",
            action="store_true",
            help="held-out worlds: drawn from the seeds under the server's key (WORLD_KEY), "
            "so no one can rebuild them from the seeds",
        )
        parser.add_argument("--name", default="")

    def handle(
        self, *args, policies, scenarios, seeds, seed_start, tiers, workers, name, sealed, **opts
    ):
        self.stderr.ending = ""  # tqdm writes whole lines and carriage returns itself
        try:
            evaluation = evaluation_create(
                policies=policies,
                scenarios=scenarios,
                seeds=seeds,
                seed_start=seed_start,
                tiers=tiers,
                workers=workers,
                name=name,
                sealed=sealed,
                progress=self.stderr,
            )
        except ValidationError as exc:
            raise option_error(exc) from None
        self.stdout.write(
            f"Evaluation #{evaluation.pk}: {evaluation.episodes:,} episodes in "
            f"{evaluation.seconds:.1f} s ({workers} worker{'s' if workers != 1 else ''})."
        )
        self.stdout.write(format_leaderboard(evaluation.leaderboard))
        self.stdout.write("")
        self.stdout.write("Cross-play ratings (openskill Plackett-Luce; ordinal = mu - 3 sigma):")
        self.stdout.write(format_ratings(evaluation.ratings))
