import io

from django.core.management.base import BaseCommand, CommandError

from procurement.management.arguments import row_id
from procurement.models import Sweep
from procurement.services.exports import write_sweep_csv, write_sweep_json


class Command(BaseCommand):
    help = "Export a sweep's results, one row per cell (scenario, policy, seed, metrics)."

    def add_arguments(self, parser) -> None:
        parser.add_argument("sweep_id", type=row_id)
        parser.add_argument("--format", choices=["csv", "json"], default="csv")
        parser.add_argument("--output", help="file path (default: standard output)")

    def handle(self, *args, sweep_id, format, output, **options) -> None:
        sweep = Sweep.objects.filter(pk=sweep_id).first()
        if sweep is None:
            raise CommandError(f"No sweep with id {sweep_id}.")
        writer = write_sweep_csv if format == "csv" else write_sweep_json
        if output:
            try:
                fh = open(output, "w", newline="", encoding="utf-8")  # noqa: SIM115
            except OSError as exc:  # a missing folder, a directory, no permission
                raise CommandError(f"Cannot write {output}: {exc.strerror}.") from None
            with fh:
                count = writer(sweep, fh)
            self.stderr.write(f"Wrote {count} rows to {output}.")
        else:
            # Through self.stdout (call_command can capture it), written whole: OutputWrapper
            # would add a newline after every chunk json.dump writes.
            buffer = io.StringIO()
            writer(sweep, buffer)
            self.stdout.write(buffer.getvalue(), ending="")
