"""Compile the expert's kernels once and keep them in numba's cache next to their sources
(``__pycache__``): ``python -m negotiation.policies.expert.warm``.

The posterior's loops are compiled on first use (columns.py, lattice.py, paths.py,
numpow.py, all ``cache=True``). Without a cache, the first process that plays the expert
on a bilateral thread compiles them (tens of seconds on two cores), and so does every
process that starts before the cache is written: a fresh checkout's test workers and
embedded site, or a new image's web process and workers at once. One bilateral episode
reaches every kernel. `make run`, `make test` and the images run this first; with the
cache written it takes about a second.
"""

from __future__ import annotations

import time


def warm() -> float:
    """Play one bilateral expert episode (compiling, or loading, every kernel); seconds."""
    from negotiation import run_episode

    started = time.perf_counter()
    run_episode("bilateral", "expert", 0, record_steps=False)
    return time.perf_counter() - started


if __name__ == "__main__":
    print(f"expert kernels compiled or loaded from numba's cache in {warm():.1f} s")
