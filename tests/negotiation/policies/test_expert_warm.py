"""The warm-up leaves the expert's compiled kernels in numba's cache, where the next
process loads them instead of compiling them."""

from __future__ import annotations

from pathlib import Path

from negotiation.policies.expert import lattice
from negotiation.policies.expert.warm import warm


def test_warm_up_leaves_the_kernels_in_numbas_cache() -> None:
    assert warm() > 0
    cache = Path(lattice.__file__).parent / "__pycache__"
    for kernel in ("lattice.refine", "columns.residuals_at", "paths.best_paths"):
        assert list(cache.glob(f"{kernel}-*.nbi")), kernel  # the index of its machine code
