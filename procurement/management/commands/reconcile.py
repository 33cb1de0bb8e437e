from django.core.management.base import BaseCommand

from procurement.management.arguments import non_negative_seconds
from procurement.services.recovery import reconcile


class Command(BaseCommand):
    help = (
        "Resume runs that stopped making progress now (workers do this every "
        "RECONCILE_INTERVAL_SECONDS): queued runs whose task never reached a worker, running "
        "ones whose heartbeat stopped, and sweeps with nothing left to run."
    )

    def add_arguments(self, parser) -> None:
        parser.add_argument(
            "--stall-seconds",
            type=non_negative_seconds,
            default=None,
            help="treat a run as stalled after this many seconds without progress "
            "(default: RUN_STALL_SECONDS)",
        )

    def handle(self, *args, stall_seconds: float | None, **options) -> None:
        done = reconcile(stall_s=stall_seconds)
        for label, ids in done.as_dict().items():
            shown = ", ".join(f"#{pk}" for pk in ids) or "none"
            self.stdout.write(f"{label.replace('_', ' ')}: {shown}")
