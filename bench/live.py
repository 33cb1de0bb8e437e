"""Benchmark: a decision persisted -> received by N concurrent WebSocket clients, through
daphne and channels-redis on loopback, as the dashboard receives it.

    .venv/bin/python -m bench.live [--clients 100 1000] [--step-delay 0.02]

Starts its own PostgreSQL and Redis (tests/servers.py) and a daphne serving
config.asgi in full mode, logs in once, connects N clients to /ws/episodes/ID/ (each
with the session cookie), then plays a real episode (hard_arena, expert) through the
production runner in a separate process, as a worker would (in the clients' process its
Python would compete with theirs for one interpreter lock): each decision is stored (COPY)
and published to the episode's group. A client's latency for a decision is its receive
time minus the decision's ``created_at`` (stamped just before the write, so the figure
includes the write itself). Prints p50/p95/p99 latency, messages delivered per second, and whether
every client got every decision.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

from tests import load
from tests.servers import PostgresServer, RedisServer

ROOT = Path(__file__).resolve().parent.parent


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
            raw = await ws.recv()
            now = time.time()  # on arrival, before this client's own parsing
            message = json.loads(raw)
            if message["type"] == "episode.decisions":
                for decision in message["decisions"]:
                    got[decision["step"]] = now
            elif message["type"] == "episode.status" and message["episode"]["status"] in (
                "finished",
                "failed",
            ):
                return


async def _clients(url: str, headers: dict, clients: int, connected, results) -> None:
    """One process's share of the viewers: connect, report ready, receive until the end."""
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
    with connected.get_lock():
        connected.value += 1
    await asyncio.wait_for(asyncio.gather(*tasks), timeout=600)
    results.put((received, retries[0]))


def _client_process(url: str, headers: dict, clients: int, connected, results) -> None:
    asyncio.run(_clients(url, headers, clients, connected, results))


def measure(web_url: str, session: str, episode_id: int, clients: int, procs: int, play) -> dict:
    """Viewers spread over ``procs`` processes (browsers do not share one interpreter),
    then the episode is played; returns every viewer's receive times."""
    url = web_url.replace("http", "ws") + f"/ws/episodes/{episode_id}/"
    headers = {"Cookie": f"sessionid={session}", "Origin": web_url}
    ctx = multiprocessing.get_context("spawn")
    connected, results = ctx.Value("i", 0), ctx.Queue()
    procs = max(1, min(procs, clients))
    shares = [clients // procs + (i < clients % procs) for i in range(procs)]
    workers = [
        ctx.Process(target=_client_process, args=(url, headers, n, connected, results))
        for n in shares
    ]
    for w in workers:
        w.start()
    deadline = time.monotonic() + 300
    while connected.value < procs:
        if time.monotonic() > deadline or any(w.exitcode not in (None, 0) for w in workers):
            raise RuntimeError("viewers could not connect")
        time.sleep(0.05)
    started = time.perf_counter()
    play()
    received: list[dict[int, float]] = []
    retries = 0
    for _ in workers:
        got, retried = results.get(timeout=600)
        received.extend(got)
        retries += retried
    seconds = time.perf_counter() - started
    for w in workers:
        w.join(timeout=30)
    return {"received": received, "seconds": seconds, "retries": retries}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, nargs="+", default=[100, 1000])
    parser.add_argument(
        "--client-procs", type=int, default=4, help="processes the viewers are spread over"
    )
    parser.add_argument(
        "--step-delay", type=float, default=0.4, help="0.4 s is the dashboard's live pace"
    )
    args = parser.parse_args()
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, 65536), hard))  # 1,000 sockets

    pg = PostgresServer(max_connections=60).start()
    redis = RedisServer(appendonly=False).start()
    try:
        run(pg, redis, args.clients, args.step_delay, args.client_procs)
    finally:
        redis.close()
        pg.close()


def play_apart(episode_id: int) -> None:
    """Run the stored episode in its own process, as a worker would."""
    code = (
        "import django, sys; django.setup(); "
        "from procurement.services.episode_runner import episode_run; "
        "episode_run(episode_id=int(sys.argv[1]))"
    )
    subprocess.run([sys.executable, "-c", code, str(episode_id)], cwd=ROOT, check=True)


def run(
    pg: PostgresServer, redis: RedisServer, clients: list[int], step_delay: float, procs: int
) -> None:
    database_url = load.prepare_database(pg)
    os.environ.update(load.app_env(database_url, REDIS_URL=redis.url(0), RECONCILE_ON_START="0"))
    import django

    django.setup()
    from procurement.models import Decision, PolicyConfig, Scenario
    from procurement.services.episodes import episode_create

    web = load.WebProcess(database_url, REDIS_URL=redis.url(0))
    try:
        session = load.login(web.url)
        print(f"daphne on {web.url}, channels-redis on {redis.url(0)}")
        for n in clients:
            episode = episode_create(
                scenario=Scenario.objects.get(name="hard_arena"),
                policy=PolicyConfig.objects.get(name="expert"),
                seed=n,
                step_delay=step_delay,
                enqueue=False,
            )
            result = measure(
                web.url, session, episode.pk, n, procs, lambda pk=episode.pk: play_apart(pk)
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
