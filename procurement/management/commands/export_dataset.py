import os
import sys
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError
from tqdm import tqdm

from procurement.services.datasets import DatasetFilterError, dataset_export


class Command(BaseCommand):
    help = (
        "Export stored, finished episodes as chat-format training records (one per decision: "
        "the LLM buyer's prompt, the action as its completion, the step reward, the episode "
        "score and ids), for SFT and GRPO in TRL."
    )

    def add_arguments(self, parser) -> None:
        parser.add_argument("--format", default="jsonl", help="jsonl (the only one so far)")
        parser.add_argument(
            "--scenario", nargs="+", action="extend", default=[], help="scenario name(s)"
        )
        parser.add_argument(
            "--policy", nargs="+", action="extend", default=[], help="policy name(s)"
        )
        parser.add_argument("--min-score", help="only episodes that scored at least this (0-1)")
        parser.add_argument("--output", default="-", help="file path (default -: standard output)")

    def handle(self, *args, format, scenario, policy, min_score, output, **options) -> None:
        try:
            export = dataset_export(
                format=format, scenarios=scenario, policies=policy, min_score=min_score
            )
        except DatasetFilterError as exc:
            raise CommandError(
                " ".join(f"--{k.replace('_', '-')}: {v}" for k, v in exc.errors.items())
            ) from None
        # The progress bar goes to standard error: standard output may be the data.
        with tqdm(total=len(export.spans), unit="ep", file=self.stderr._out) as bar:
            lines = export.lines(on_episode=bar.update)
            if output == "-":
                try:
                    for line in lines:
                        self.stdout.write(line, ending="")
                    self.stdout.flush()
                except BrokenPipeError:  # `| head`: the reader has had enough, so do we
                    # quietly: Python flushes standard output again at exit
                    os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
                    raise SystemExit(1) from None
                destination = "standard output"
            else:
                _write_whole(Path(output), lines)
                destination = output
        self.stderr.write(export.summary(destination))


def _write_whole(path: Path, lines) -> None:
    """Write into a file beside ``path`` and rename it at the end, so that a failure (or
    Ctrl-C) half-way leaves no partial file behind."""
    if path.is_dir():
        raise CommandError(f"Cannot write {path}: it is a directory.")
    partial = path.with_name(f".{path.name}.{os.getpid()}.part")
    try:
        fh = open(partial, "w", encoding="utf-8")  # noqa: SIM115
    except OSError as exc:  # a missing folder, no permission
        raise CommandError(f"Cannot write {path}: {exc.strerror}.") from None
    try:
        with fh:
            fh.writelines(lines)
        os.replace(partial, path)
    except BaseException:
        partial.unlink(missing_ok=True)
        raise
