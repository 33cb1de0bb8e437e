"""Where a world's randomness starts: the public seed alone, or the seed under a key.

A public world (research, tests, benchmarks) is seeded with its seed: anyone who knows
the seed and the scenario can rebuild it, draw for draw. A sealed world (a person's seat,
a rated evaluation) is seeded with HMAC-SHA256 of the seed under a key the server holds,
so the seed alone rebuilds nothing: without the key, its hidden draws (reservations,
personas' numbers, stress, true reliability, escalation fractions) cannot be derived.

Side draws (``side_uniform``) come from the same root but not from the world's
generator, so a rule that needs a hidden number of its own (an escalation's fraction)
moves no other draw of the episode.
"""

from __future__ import annotations

import hashlib
import hmac

_UNIT = 2.0**-53


def check_world_key(world_key: bytes | None) -> bytes | None:
    """``world_key`` itself when it can seal a world (non-empty bytes) or is None."""
    if world_key is not None and (not isinstance(world_key, bytes) or not world_key):
        raise ValueError("world_key must be non-empty bytes, or None for a public world.")
    return world_key


def world_root(seed: int, world_key: bytes | None) -> int:
    """The integer a world's generator starts from: ``seed`` itself without a key, else
    HMAC-SHA256(world_key, seed) as an unsigned big-endian integer."""
    if check_world_key(world_key) is None:
        return seed
    mac = hmac.new(world_key, str(seed).encode("ascii"), hashlib.sha256).digest()
    return int.from_bytes(mac, "big")


def side_uniform(root: int, *labels: str | int) -> float:
    """A uniform draw in [0, 1) named by ``labels``, derived from ``root`` (SHA-256 of
    both; 53 bits, a float's precision) without touching the world's generator."""
    text = "/".join([str(root), *map(str, labels)]).encode()
    word = int.from_bytes(hashlib.sha256(text).digest()[:8], "big") >> 11
    return word * _UNIT
