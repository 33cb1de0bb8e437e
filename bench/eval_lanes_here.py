"""``manage.py evaluate``'s two lanes played in turn (before) against at once (now).

The command plays an evaluation in its own process. Before, it played the rule lane and
then the model lane; now each lane plays in its own thread (services.evaluations.
evaluation_play_lanes), as the cpu and gpu workers play them. This runs, interleaved,
rounds of each on the same evaluation (rule buyers plus one language-model buyer) and
prints each run's wall time (first start to seal) and each lane's own play time.

Needs a migrated database (DATABASE_URL, or the embedded SQLite default):

    PYTHONPATH=$PWD .venv/bin/python bench/eval_lanes_here.py [--model FOLDER]
        [--seeds 20] [--rounds 2]

Without --model a tiny random GPT-2 is built (tests/llm_models.py: CPU, noise replies).
``--latency S`` adds S seconds to every model call, spent waiting (as on a GPU or a
model server), not on this machine's cores.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", help="a transformers model folder (default: a tiny one)")
    parser.add_argument("--rules", default="expert,random,always_accept")
    parser.add_argument("--seeds", type=int, default=20)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--latency", type=float, default=0.0, help="seconds added per call")
    args = parser.parse_args()

    import django

    django.setup()
    from procurement.models import PolicyConfig
    from procurement.services import evaluations as svc

    if args.latency:
        _slow_model_calls(args.latency)
    model = args.model
    if model is None:
        from tests.llm_models import build_tiny_model

        model = str(build_tiny_model(Path(tempfile.mkdtemp()) / "gpt2"))
    PolicyConfig.objects.update_or_create(
        name="bench-lanes-llm",
        defaults={"policy": "llm", "backend": "transformers", "model": model},
    )
    params = {
        "policies": f"{args.rules},bench-lanes-llm",
        "scenarios": "bilateral",
        "seeds": args.seeds,
    }
    ways = {
        "in turn": lambda pk: svc.evaluation_execute(evaluation_id=pk),
        "at once": lambda pk: svc.evaluation_play_lanes(evaluation_id=pk),
    }
    walls: dict[str, list[float]] = {way: [] for way in ways}
    for round_ in range(args.rounds):
        for way, play in ways.items():
            evaluation = svc.start_evaluation(**params, enqueue=False)
            t0 = time.perf_counter()
            done = play(evaluation.pk)
            wall = time.perf_counter() - t0
            assert done.status == "finished", done.error
            walls[way].append(wall)
            lanes = {p.lane: p.seconds for p in done.parts.all()}
            print(
                f"round {round_ + 1} {way:>7}: {done.episodes} episodes, wall {wall:6.2f} s "
                f"(stored {done.seconds:6.2f} s); rule lane played {lanes['rule']:6.2f} s, "
                f"llm lane {lanes['llm']:6.2f} s; load {os.getloadavg()[0]:.1f}"
            )
    turn, once = statistics.median(walls["in turn"]), statistics.median(walls["at once"])
    print(
        f"median wall: in turn {turn:.2f} s, at once {once:.2f} s, ratio {once / turn:.2f}"
        f" (model calls +{args.latency:g} s each)"
    )


def _slow_model_calls(seconds: float) -> None:
    """Every process-wide batcher's model calls take ``seconds`` more, waiting."""
    from bench.eval_batching import Slowed
    from negotiation.llm import resolve_backend, shared
    from negotiation.llm.batching import BatchingBackend

    made: dict = {}

    def slowed_batcher(spec):
        if spec not in made:
            inner = resolve_backend(spec.backend, spec.model, **dict(spec.options))
            made[spec] = BatchingBackend(Slowed(inner, seconds, 0.0))
        return made[spec]

    shared.shared_batcher = slowed_batcher


if __name__ == "__main__":
    main()
