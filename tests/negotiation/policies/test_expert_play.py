"""The expert's play is pinned: speed work on its posterior must not change one action.

Each cell's fingerprint hashes bench/fingerprint.py's per-episode digest (every step's
action, validity, error, supplier response, reward and running score, and the episode's
score and metrics) over seeds 0..SEEDS-1. They were recorded at f20d8a8, before the
posterior's fit was compiled, and the bilateral cells again when the expert stopped
retracting its own offers (policy._never_under_last); a change that moves any figure of
any of these episodes fails here. The ``mixed:`` cells re-draw every supplier's tactics
after reset, as bench/quality.py's held-out mixed family does.
"""

from __future__ import annotations

import hashlib

import pytest

from bench.fingerprint import episode_digest

SEEDS = 10
RECORDED = {
    "easy_negotiation": "0daf2fa0bc8c4f35",
    "medium_adversarial": "40831e2b80520f0d",
    "hard_arena": "823b81d359dacb05",
    "bilateral": "e55074df4e93587f",
    "bilateral_cooperative": "0a78c9f970462e5c",
    "bilateral_deceptive": "9232aa1b49491e63",
    "bilateral_distressed": "3bc5c3dd2e48da7e",
    "mixed:medium_adversarial": "1abdd0c933fed821",
    "mixed:bilateral": "281716784e96f92c",
    "mixed:bilateral_cooperative": "f608fd14b760c509",
    "mixed:bilateral_deceptive": "e30f3d1b61bf026a",
    "mixed:bilateral_distressed": "95e9a54c2f0309ba",
}


def _fingerprint(cell: str) -> str:
    h = hashlib.sha256()
    for seed in range(SEEDS):
        *_, digest = episode_digest((cell, "expert", seed))
        h.update(f"{seed}:{digest}\n".encode())
    return h.hexdigest()[:16]


@pytest.mark.parametrize("cell", list(RECORDED))
def test_the_experts_play_is_the_recorded_one(cell):
    assert _fingerprint(cell) == RECORDED[cell]
