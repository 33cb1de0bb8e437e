"""Benchmark: a decision persisted -> received by N concurrent WebSocket clients, through
daphne and channels-redis on loopback, as the dashboard receives it.

    .venv/bin/python bench/live.py [--clients 100 1000] [--step-delay 0.02]

Starts its own PostgreSQL and Redis (tests/servers.py) and a daphne serving
procurement.asgi in full mode, logs in once, connects N clients to /ws/episodes/ID/ (each
with the session cookie), then plays a real episode (hard_arena, expert) in this process
through the production runner: each decision is stored (COPY) and published to the
episode's group. A client's latency for a decision is its receive time minus the
decision's ``created_at`` (stamped just before the write, so the figure includes the
write itself). Prints p50/p95/p99 latency, messages delivered per second, and whether
every client got every decision.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests import load  # noqa: E402
from tests.servers import PostgresServer, RedisServer  # noqa: E402


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


async def client(
    url: str, headers: dict, ready: asyncio.Event, got: dict, counter: list, retries: list
) -> None:
    import websockets

    for attempt in range(6):  # as the page does: a refused handshake is retried with backoff
        try:
            ws = await websockets.connect(
                url,
                additional_headers=headers,
                max_size=2**24,
                open_timeout=120,
                ping_interval=None,
            )
            break
        except (OSError, EOFError, websockets.InvalidHandshake, websockets.InvalidMessage):
            retries[0] += 1
            await asyncio.sleep(0.5 * 2**attempt)
    else:
        raise RuntimeError("could not connect after 6 tries")
    async with ws:
        json.loads(await ws.recv())  # the snapshot
        counter[0] += 1
        if counter[0] == counter[1]:
            ready.set()
        while True:
            message = json.loads(await ws.recv())
            now = time.time()
            if message["type"] == "episode.decisions":
                for decision in message["decisions"]:
                    got[decision["step"]] = now
            elif message["type"] == "episode.status" and message["episode"]["status"] in (
                "finished",
                "failed",
            ):
                return


async def measure(web_url: str, session: str, episode_id: int, clients: int, play) -> dict:
    url = web_url.replace("http", "ws") + f"/ws/episodes/{episode_id}/"
    headers = {"Cookie": f"sessionid={session}", "Origin": web_url}
    ready = asyncio.Event()
    counter = [0, clients]
    received: list[dict[int, float]] = [{} for _ in range(clients)]
    retries = [0]
    tasks = []
    for i in range(clients):
        tasks.append(
            asyncio.create_task(client(url, headers, ready, received[i], counter, retries))
        )
        if i % 25 == 24:
            await asyncio.sleep(0.25)  # connect in waves, as page loads would
    await asyncio.wait_for(ready.wait(), timeout=300)
    started = time.perf_counter()
    await asyncio.to_thread(play)
    await asyncio.wait_for(asyncio.gather(*tasks), timeout=300)
    return {
        "received": received,
        "seconds": time.perf_counter() - started,
        "retries": retries[0],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, nargs="+", default=[100, 1000])
    parser.add_argument(
        "--step-delay", type=float, default=0.4, help="0.4 s is the dashboard's live pace"
    )
    args = parser.parse_args()
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, 65536), hard))  # 1,000 sockets

    pg = PostgresServer(max_connections=60).start()
    redis = RedisServer(appendonly=False).start()
    try:
        run(pg, redis, args.clients, args.step_delay)
    finally:
        redis.close()
        pg.close()


def run(pg: PostgresServer, redis: RedisServer, clients: list[int], step_delay: float) -> None:
    database_url = load.prepare_database(pg)
    os.environ.update(load.app_env(database_url, REDIS_URL=redis.url(0), RECONCILE_ON_START="0"))
    import django

    django.setup()
    from procurement.models import Decision, PolicyConfig, Scenario
    from procurement.services.episode_runner import run_stored_episode
    from procurement.services.episodes import start_episode

    web = load.WebProcess(database_url, REDIS_URL=redis.url(0))
    try:
        session = load.login(web.url)
        print(f"daphne on {web.url}, channels-redis on {redis.url(0)}")
        for n in clients:
            episode = start_episode(
                scenario=Scenario.objects.get(name="hard_arena"),
                policy=PolicyConfig.objects.get(name="expert"),
                seed=n,
                step_delay=step_delay,
                enqueue=False,
            )
            result = asyncio.run(
                measure(
                    web.url, session, episode.pk, n, lambda pk=episode.pk: run_stored_episode(pk)
                )
            )
            stamps = dict(
                Decision.objects.filter(episode=episode).values_list("step", "created_at")
            )
            latencies = [
                (seen - stamps[step].timestamp()) * 1000
                for got in result["received"]
                for step, seen in got.items()
            ]
            delivered, expected = len(latencies), len(stamps) * n
            print(
                f"{n:>5} clients, {len(stamps)} decisions: latency p50 "
                f"{statistics.median(latencies):.1f} ms, p95 {percentile(latencies, 0.95):.1f} ms,"
                f" p99 {percentile(latencies, 0.99):.1f} ms; "
                f"{delivered / result['seconds']:,.0f} messages/s delivered; "
                f"{delivered}/{expected} decisions received; "
                f"{result['retries']} handshakes retried"
            )
    finally:
        web.stop()


if __name__ == "__main__":
    main()
