"""How much an evaluation's stored pieces (EvaluationPiece) take in the database, the
0018 layout against the compact one.

A rule lane is played through the service (procurement.services.evaluations) with the
seal held back, so its pieces stay. Every store's outcomes are also written, as 0018
wrote them (one jsonb list of outcome records per store), into a temporary table of
0018's shape. Printed: bytes per episode of each (the rows' own size, pg_column_size,
TOAST compression included; and the tables' size on disk), while the lane plays (one
piece per store) and once it ended (the compact layout folds a lane into one piece),
and both scaled to the largest evaluation allowed (negotiation.evaluation.MAX_EPISODES).

Needs PostgreSQL (DATABASE_URL) with migrations applied:

    PYTHONPATH=$PWD .venv/bin/python bench/eval_pieces.py [--seeds 300]
"""

from __future__ import annotations

import argparse
import json
import os
import time

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

OLD_TABLE = """CREATE TEMP TABLE old_pieces (
    id bigserial PRIMARY KEY, lane varchar(8) NOT NULL, outcomes jsonb NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(), evaluation_id bigint NOT NULL)"""


def _sizes(cursor, table: str, column: str, where: str = "") -> tuple[int, int]:
    cursor.execute(f"SELECT coalesce(sum(pg_column_size({column})), 0) FROM {table} {where}")
    (rows,) = cursor.fetchone()
    cursor.execute(f"SELECT pg_total_relation_size('{table}')")
    (disk,) = cursor.fetchone()
    return int(rows), int(disk)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--policies", default="expert,random,always_accept")
    parser.add_argument("--scenarios", default="bilateral")
    parser.add_argument("--seeds", type=int, default=300)
    parser.add_argument(
        "--small-stores",
        action="store_true",
        help="one seed per chunk, a store after each (as the model lane stores: an episode "
        "or a few at a time, each piece below TOAST's 2 kB, so jsonb is not compressed)",
    )
    args = parser.parse_args()

    import django

    django.setup()
    from django.db import connection

    import negotiation.evaluation as engine
    from negotiation.evaluation import MAX_EPISODES, outcome_record
    from procurement.models import EvaluationPiece
    from procurement.services import evaluations as svc

    if connection.vendor != "postgresql":
        raise SystemExit("needs PostgreSQL: set DATABASE_URL")
    if args.small_stores:
        engine.CHUNK_SEEDS, svc.FLUSH_INTERVAL_S = 1, 0.0
    with connection.cursor() as cursor:
        cursor.execute(OLD_TABLE)
        cursor.execute("VACUUM ANALYZE procurement_evaluationpiece")
    evaluation = svc.start_evaluation(
        policies=args.policies, scenarios=args.scenarios, seeds=args.seeds, enqueue=False
    )
    real_flush, real_seal, real_fold = (
        svc._Lane.flush, svc.evaluation_seal_if_done, svc._fold_pieces
    )  # fmt: skip
    playing: dict[str, tuple[int, int]] = {}

    def flush_both(self) -> None:
        if self.pending:
            rows = json.dumps([outcome_record(o) for o in self.pending])
            with connection.cursor() as cursor:
                cursor.execute(
                    "INSERT INTO old_pieces (lane, outcomes, evaluation_id) VALUES (%s, %s, %s)",
                    [self.part.lane, rows, evaluation.pk],
                )
        real_flush(self)

    def measure_then_seal(*, evaluation_id: int):
        with connection.cursor() as cursor:  # the lane ended: folded, not yet sealed
            where = f"WHERE evaluation_id = {evaluation_id}"
            playing["new_ended"] = _sizes(cursor, "procurement_evaluationpiece", "data", where)
            playing["old"] = _sizes(cursor, "old_pieces", "outcomes")
            cursor.execute("SELECT sum(pg_column_size(outcomes::text::jsonb)) FROM old_pieces")
            playing["old_plain"] = (int(cursor.fetchone()[0]), 0)
        return real_seal(evaluation_id=evaluation_id)

    svc._Lane.flush = flush_both

    def measure_then_fold(evaluation_id: int, lane: str) -> None:
        with connection.cursor() as cursor:
            where = f"WHERE evaluation_id = {evaluation_id}"
            playing["new_playing"] = _sizes(cursor, "procurement_evaluationpiece", "data", where)
            playing["pieces"] = (EvaluationPiece.objects.filter(evaluation_id=evaluation_id)
                                 .count(), 0)  # fmt: skip
        real_fold(evaluation_id, lane)

    svc._fold_pieces = measure_then_fold
    svc.evaluation_seal_if_done = measure_then_seal
    t0 = time.perf_counter()
    done = svc.evaluation_execute(evaluation_id=evaluation.pk, lane="rule")
    seconds = time.perf_counter() - t0
    n = done.episodes
    stores, load = playing["pieces"][0], os.getloadavg()[0]
    print(f"{n} rule episodes ({args.policies} x {args.scenarios} x {args.seeds} seeds) "
          f"in {seconds:.1f} s, {stores} stores; load {load:.1f}")  # fmt: skip
    print(f"{'layout':<34} {'rows B/ep':>10} {'disk B/ep':>10} {'rows @max MB':>13}")
    for label, key in (
        ("0018: jsonb per store", "old"),
        ("0018: the same jsonb, uncompressed", "old_plain"),
        ("0019: deflated per store (playing)", "new_playing"),
        ("0019: lane ended, folded into one", "new_ended"),
    ):
        rows, disk = playing[key]
        print(
            f"{label:<34} {rows / n:>10.1f} {disk / n:>10.1f} "
            f"{rows / n * MAX_EPISODES / 1e6:>13.1f}"
        )
    print(f"status {done.status}; pieces left after the seal: "
          f"{EvaluationPiece.objects.filter(evaluation=done).count()}")  # fmt: skip


if __name__ == "__main__":
    main()
