"""Benchmark: a sweep of medium_adversarial episodes through real Celery workers on
PostgreSQL and Redis, every decision persisted, against the pure engine on the same
episodes in the same run.

    .venv/bin/python bench/sweep.py [--episodes 1000] [--workers 2]

Uses its own database (arena_bench, recreated) and Redis db 2. Prints both times, the line
``ratio <sweep / engine>``, rows written per second and the workers' memory.
"""

from __future__ import annotations

import argparse
import os
import secrets
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

PG = os.environ.get("BENCH_PG", "postgres://postgres@127.0.0.1:5432")
DB_NAME = "arena_bench"
REDIS = os.environ.get("BENCH_REDIS_URL", "redis://127.0.0.1:6379/2")
ENV = {
    **os.environ,
    "DATABASE_URL": f"{PG}/{DB_NAME}",
    "REDIS_URL": REDIS,
    "SECRET_KEY": os.environ.get("SECRET_KEY") or secrets.token_urlsafe(50),
    "LOG_LEVEL": "WARNING",
    "PYTHONPATH": str(ROOT),
}
os.environ.update(ENV)
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")


def rss_mb(pids: list[int]) -> float:
    total = 0
    for pid in pids:
        try:
            for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1])
        except FileNotFoundError:
            pass
    return total / 1024


def worker_pids(proc: subprocess.Popen) -> list[int]:
    out = subprocess.run(["pgrep", "-P", str(proc.pid)], capture_output=True, text=True).stdout
    return [proc.pid, *map(int, out.split())]


def recreate_database() -> None:
    import psycopg

    with psycopg.connect(f"{PG}/postgres", autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {DB_NAME} WITH (FORCE)")
        conn.execute(f"CREATE DATABASE {DB_NAME}")
    subprocess.run([sys.executable, "manage.py", "migrate", "-v0"], cwd=ROOT, env=ENV, check=True)


def engine_time(scenario: str, policy: str, seeds: range) -> tuple[float, int]:
    from negotiation import run_episode

    started = time.perf_counter()
    steps = sum(len(run_episode(scenario, policy, seed).steps) for seed in seeds)
    return time.perf_counter() - started, steps


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=1000)
    parser.add_argument("--workers", type=int, default=2, help="worker pool processes")
    parser.add_argument("--policy", default="expert")
    parser.add_argument("--scenario", default="medium_adversarial")
    args = parser.parse_args()

    recreate_database()
    import django

    django.setup()
    from procurement.models import Decision, PolicyConfig, Scenario, SweepStatus
    from procurement.services.scenarios import presets_seed
    from procurement.services.sweeps import sweep_create
    from workers import app
    from workers.commands import worker_argv

    presets_seed()
    app.control.purge()
    worker = subprocess.Popen(
        worker_argv("cpu", concurrency=args.workers, name="bench", loglevel="WARNING"),
        cwd=ROOT,
        env=ENV,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        while not app.control.ping(timeout=0.5):
            time.sleep(0.2)
        seeds = range(args.episodes)
        t_engine, steps = engine_time(args.scenario, args.policy, seeds)
        print(
            f"engine: {args.episodes} episodes, {steps} steps in {t_engine:.2f} s "
            f"({steps / t_engine:,.0f} steps/s, one process)"
        )

        scenario = Scenario.objects.get(name=args.scenario)
        policy = PolicyConfig.objects.get(name=args.policy)
        peak_mb = 0.0
        started = time.perf_counter()
        sweep = sweep_create(scenarios=[scenario], policies=[policy], seeds=args.episodes)
        while True:
            peak_mb = max(peak_mb, rss_mb(worker_pids(worker)))
            sweep.refresh_from_db()
            if sweep.status in (SweepStatus.FINISHED, SweepStatus.FAILED):
                break
            time.sleep(0.05)
        t_sweep = time.perf_counter() - started
        rows = Decision.objects.filter(episode__sweep=sweep).count()
        print(
            f"sweep:  {sweep.done_cells}/{sweep.total_cells} episodes, {rows} decisions "
            f"persisted in {t_sweep:.2f} s through Celery ({args.workers} worker processes)"
        )
        assert rows == steps, f"persisted {rows} decisions, the engine made {steps}"
        print(f"ratio {t_sweep / t_engine:.2f}")
        print(f"rows/s {rows / t_sweep:,.0f}")
        print(f"worker memory peak {peak_mb:.0f} MB (main + {args.workers} pool processes)")
    finally:
        worker.terminate()
        worker.wait(30)


if __name__ == "__main__":
    main()
