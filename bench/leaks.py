"""Leak benchmark: SmolLM2 (the shipped model) plays LLM suppliers over N bilateral
episodes, every persona in turn, against the expert buyer; each round of model calls of
all episodes of a wave is one batch. Every public string (step info, final observation)
is checked for the suppliers' secrets by tests/negotiation/suppliers/leaks.py, a check
independent of the guard's own detector.

Prints episodes, LLM supplier decisions and fallbacks, the guard's repairs by reason,
messages it replaced, leaks found, the wall time, and the model's messages that passed.

Usage: PYTHONPATH=. .venv/bin/python bench/leaks.py [--episodes 100] [--wave 50]
                                                    [--max-rounds 8] [--seed0 0]
"""

from __future__ import annotations

import argparse
import time

from negotiation import load_scenario
from negotiation.config import PERSONAS
from negotiation.llm.registry import get_backend
from tests.negotiation.suppliers.leaks import Check, check_batch


def _job(i: int, seed0: int, max_rounds: int) -> tuple[dict, int]:
    persona = PERSONAS[i % len(PERSONAS)]
    cfg = load_scenario("bilateral", persona=persona, max_rounds=max_rounds).model_dump()
    cfg["supplier_llm"] = {"backend": "transformers", "model": "smollm2", "personas": [persona]}
    return cfg, seed0 + i // len(PERSONAS)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--episodes", type=int, default=100)
    ap.add_argument("--wave", type=int, default=50, help="episodes played at once")
    ap.add_argument("--max-rounds", type=int, default=8)
    ap.add_argument("--seed0", type=int, default=0)
    args = ap.parse_args()

    started = time.perf_counter()
    backend = get_backend("transformers", "smollm2", device="cpu")
    print(f"SmolLM2-135M-Instruct loaded in {time.perf_counter() - started:.1f} s", flush=True)
    jobs = [_job(i, args.seed0, args.max_rounds) for i in range(args.episodes)]
    total = Check()
    started = time.perf_counter()
    for w in range(0, len(jobs), args.wave):
        total.add(check_batch(jobs[w : w + args.wave], backend))
        print(
            f"  {total.episodes} episodes, {total.llm_decisions} decisions, "
            f"{len(total.leaks)} leaks, {time.perf_counter() - started:.0f} s",
            flush=True,
        )
    wall = time.perf_counter() - started
    print(f"episodes:               {total.episodes}")
    print(f"supplier LLM decisions: {total.llm_decisions} ({total.llm_fallbacks} fell back)")
    print(f"decisions price-held:   {total.price_repairs} (the guard repaired kind or price)")
    print(f"messages replaced:      {total.refused_messages}")
    print(f"guard repairs:          {total.guard_interventions}")
    for reason, n in total.repairs.most_common():
        print(f"  {reason:28s} {n}")
    print(f"public supplier messages checked: {total.messages}")
    print(f"leaks found:            {len(total.leaks)}")
    for leak in total.leaks[:20]:
        print(f"  {leak}")
    print(f"model calls: {backend.stats.calls}, wall {wall:.0f} s")
    print(f"LLM messages passed as written: {sum(total.kept.values())}")
    for text, n in total.kept.most_common(12):
        print(f"  {n:3d} x {text}")


if __name__ == "__main__":
    main()
