"""Benchmark: seconds per replay-board state request (``public_state_at``, what
``GET /api/episodes/ID/state/?step=N`` answers) on a long stored episode.

    .venv/bin/python -m bench.state [--steps 10000] [--requests 20]

Runs in-process on the embedded default (SQLite) in a fresh data folder: stores one
episode of ``--steps`` decisions (a random buyer's move every 50th step, refused moves in
between, so the weeks run to their end), then times the state of the last step (first
and second call), of the step before it, and of ``--requests`` random steps after those.
The probe speaks only ``public_state_at``, so it runs against a checkout without replay
checkpoints too (PYTHONPATH=that checkout).
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import tempfile
import time

os.environ.pop("DATABASE_URL", None)
os.environ.pop("REDIS_URL", None)
os.environ["DATA_DIR"] = tempfile.mkdtemp(prefix="bench-state-")
os.environ.setdefault("SECRET_KEY", "bench-state-not-a-secret-key-bench-state-not-a-secret")
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

REFUSED = {"action_type": "negotiate", "supplier_id": "none", "requirement_id": "none", "price": 1}


def _long_episode(steps: int):
    from django.core.management import call_command

    from negotiation import ProcurementEnv, load_scenario
    from negotiation.policies.random import RandomPolicy
    from negotiation.runner import record_step
    from procurement.models import PolicyConfig
    from procurement.services import episodes as svc
    from procurement.services.scenarios import scenario_create

    call_command("migrate", verbosity=0)
    call_command("seed_presets", verbosity=0)
    config = load_scenario(
        "medium_adversarial", weeks=104, actions_per_week=100, max_steps=100_000
    ).model_dump(mode="json")
    scenario = scenario_create(name="bench-long", config=config)
    policy = PolicyConfig.objects.get(name="random")
    episode = svc.episode_create(scenario=scenario, policy=policy, seed=3, enqueue=False)
    attempt = svc.episode_claim(episode=episode)
    env = ProcurementEnv(config)
    obs = env.reset(seed=episode.seed)
    buyer = RandomPolicy(seed=episode.seed)
    records = []
    while not env.done and len(records) < steps:
        action = buyer.act(obs) if len(records) % 50 == 0 else REFUSED
        result, record = record_step(env, action)
        obs = result.observation
        records.append(record.to_dict())
    for i in range(0, len(records), 2000):
        batch = records[i : i + 2000]
        svc.episode_decisions_append(episode=episode, records=batch, attempt=attempt)
    episode.refresh_from_db()
    return episode


def _timed(episode, step: int) -> float:
    from procurement.selectors.episodes import public_state_at

    t0 = time.perf_counter()
    public_state_at(episode, step)
    return time.perf_counter() - t0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=10_000)
    parser.add_argument("--requests", type=int, default=20)
    args = parser.parse_args()
    import django

    django.setup()
    episode = _long_episode(args.steps)
    last = episode.steps - 1
    print(f"episode of {episode.steps} stored decisions; load: {os.getloadavg()[0]:.2f}")
    print(f"  state at the last step, first call   {_timed(episode, last):8.4f} s")
    print(f"  state at the last step, second call  {_timed(episode, last):8.4f} s")
    print(f"  state at the step before it          {_timed(episode, last - 1):8.4f} s")
    rng = random.Random(0)
    times = [_timed(episode, rng.randrange(-1, episode.steps)) for _ in range(args.requests)]
    print(
        f"  {args.requests} random steps after those: median {statistics.median(times):.4f} s,"
        f" max {max(times):.4f} s"
    )
    try:  # a checkout with replay checkpoints: what they hold now
        from procurement.selectors.replay_checkpoints import STORE
    except ImportError:
        return
    print(f"  replay checkpoints held: {STORE.size / 1e6:.2f} MB")


if __name__ == "__main__":
    main()
