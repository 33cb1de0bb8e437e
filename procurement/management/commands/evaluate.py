import argparse

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError

from negotiation.evaluation import format_leaderboard, format_matrix, format_ratings
from procurement.management.arguments import integer, option_error, seed
from procurement.validators import parse_model_price


def price(text: str) -> tuple[str, tuple[float, float]]:
    """MODEL=IN[:OUT]: money per million tokens in (prompt) and out (completion)."""
    try:
        return parse_model_price(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


class Command(BaseCommand):
    help = (
        "Evaluate buyers (rule policies and stored policy configs, LLM ones included) against "
        "supplier line-ups on scenarios x paired seeds: print and store a leaderboard with "
        "bootstrap 95 % CIs, paired differences against the best and ties, pass^k, worst "
        "case and cost, the buyers x suppliers matrix, and openskill ratings (buyers and "
        "suppliers apart)."
    )

    def add_arguments(self, parser) -> None:
        parser.add_argument(
            "--policies",
            required=True,
            help="comma-separated buyers: rule policy names or stored policy configs",
        )
        parser.add_argument(
            "--scenarios", required=True, help="comma-separated scenario names, or 'all' presets"
        )
        parser.add_argument(
            "--suppliers",
            default="",
            help="comma-separated supplier line-ups: 'scenario' (as configured), rule or field "
            "personas (hardball, ...), llm:<model> or llm:<backend>:<model>",
        )
        parser.add_argument("--seeds", type=integer, required=True, help="seeds per cell")
        parser.add_argument("--seed-start", type=seed, default=0)
        parser.add_argument(
            "--replays", type=integer, default=1, help="plays per seed (sampled models: pass^k)"
        )
        parser.add_argument(
            "--price",
            type=price,
            action="append",
            default=[],
            metavar="MODEL=IN[:OUT]",
            help="money per million tokens for a model (repeatable); local models cost 0",
        )
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

    def handle(self, *args, workers, price, **opts):
        from procurement.errors import ApplicationError
        from procurement.selectors.evaluations import dropped_sentence, evaluation_lanes
        from procurement.services.evaluations import evaluation_create

        self.stderr.ending = ""  # tqdm writes whole lines and carriage returns itself
        try:
            evaluation = evaluation_create(
                policies=opts["policies"],
                scenarios=opts["scenarios"],
                suppliers=opts["suppliers"],
                seeds=opts["seeds"],
                seed_start=opts["seed_start"],
                replays=opts["replays"],
                prices=dict(price),
                tiers=opts["tiers"],
                workers=workers,
                name=opts["name"],
                sealed=opts["sealed"],
                progress=self.stderr,
            )
        except ValidationError as exc:
            raise option_error(exc) from None
        except ApplicationError as exc:  # failed while it played: the row says why
            raise CommandError(exc.message) from None
        self.stdout.write(
            f"Evaluation #{evaluation.pk}: {evaluation.episodes:,} episodes in "
            f"{evaluation.seconds:.1f} s ({workers} worker{'s' if workers != 1 else ''})."
        )
        for lane in evaluation_lanes(evaluation):
            self.stdout.write(f"  {lane['summary']}")  # the page's line for the lane
        self.stdout.write(format_leaderboard(evaluation.leaderboard))
        self.stdout.write("")
        if evaluation.leaderboard_unexposed:  # the page's second reading, in the same words
            self.stdout.write(f"Without exposed worlds. {dropped_sentence(evaluation)}")
            self.stdout.write(format_leaderboard(evaluation.leaderboard_unexposed))
            self.stdout.write("")
        self.stdout.write(format_matrix(evaluation.matrix))
        self.stdout.write("")
        self.stdout.write(
            "Ratings (openskill Plackett-Luce; ordinal = mu - 3 sigma; buyers and suppliers "
            "rated apart):"
        )
        self.stdout.write(format_ratings(evaluation.ratings))
