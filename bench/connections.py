"""Benchmark: 200 concurrent API clients against one daphne on a small PostgreSQL, with the
old connection settings (persistent per-thread connections, ``CONN_MAX_AGE=60``) and the
new ones (psycopg's pool, ``DB_POOL_*`` defaults).

    .venv/bin/python -m bench.connections [--clients 200] [--max-connections 30]

Starts its own PostgreSQL (tests/servers.py) on a spare port, so it needs the server
binaries but no running database. Prints, per setting: answers by status, 5xx count,
p50/p95 latency, the most connections seen in pg_stat_activity (sampled every 20 ms),
the connections still open 2 s after the burst and /healthz then.
"""

from __future__ import annotations

import argparse
import time

from tests import load
from tests.servers import PostgresServer

SETTINGS = {
    "before: CONN_MAX_AGE=60, no pool": {"DB_POOL_MAX_SIZE": "0", "CONN_MAX_AGE": "60"},
    "after: psycopg pool (defaults)": {},
}


def run(pg: PostgresServer, database_url: str, env: dict[str, str], clients: int) -> dict:
    web = load.WebProcess(database_url, **env)
    sampler = load.ConnectionSampler(pg, load.DB_NAME)
    try:
        session = load.login(web.url)
        with sampler:
            result = load.burst(web.url, session, clients=clients)
        time.sleep(2)
        return {
            "statuses": dict(sorted(result.by_status().items())),
            "5xx": len(result.failures),
            "p50 ms": round(result.percentile_ms(0.5)),
            "p95 ms": round(result.percentile_ms(0.95)),
            "burst s": round(result.seconds, 2),
            "max connections": sampler.peak,
            "open 2 s later": sampler.count(),
            "healthz after": load.fetch(f"{web.url}/healthz")[0],
        }
    finally:
        sampler.close()
        web.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=200)
    parser.add_argument("--max-connections", type=int, default=30)
    args = parser.parse_args()
    pg = PostgresServer(max_connections=args.max_connections).start()
    try:
        database_url = load.prepare_database(pg)
        paths = ", ".join(load.BURST_PATHS)
        print(
            f"{args.clients} clients at once over {paths}; max_connections={args.max_connections}"
        )
        for label, env in SETTINGS.items():
            figures = run(pg, database_url, env, args.clients)
            print(f"{label}: " + ", ".join(f"{k} {v}" for k, v in figures.items()))
    finally:
        pg.close()


if __name__ == "__main__":
    main()
