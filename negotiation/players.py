"""Buyer players of an evaluation: a named policy snapshot, built per episode, and timed.

A snapshot is what a stored policy config plays ({"policy", "params", "backend",
"model"}); a bare rule policy name is the snapshot {"policy": name}. ``Timed`` wraps the
built policy for one episode: it plays a replay's own seed (the world keeps the episode's
seed), times every decision, and fingerprints the first observation, the world as the
buyer first sees it, so that paired seeds can be checked to be really paired.
"""

from __future__ import annotations

import hashlib
import json
import time
import zlib
from typing import Any

from .llm.backend import LLMBackend
from .llm.shared import LLMSpec
from .observation import Observation
from .policies import get_policy
from .policies.base import Policy

LLM_POLICY = "llm"


def uses_llm(snapshot: dict[str, Any]) -> bool:
    return bool(snapshot.get("backend")) or snapshot.get("policy") == LLM_POLICY


def llm_spec(snapshot: dict[str, Any]) -> LLMSpec | None:
    """The model a buyer snapshot talks to (None: a rule policy)."""
    if not uses_llm(snapshot):
        return None
    params = snapshot.get("params") or {}
    return LLMSpec(
        snapshot.get("backend") or params.get("backend") or "transformers",
        snapshot.get("model") or params.get("model") or "",
        tuple(sorted((params.get("backend_options") or {}).items())),
    )


def build_policy(snapshot: dict[str, Any], seed: int, backend: LLMBackend | None = None) -> Policy:
    """The snapshot's policy; ``backend`` (an episode's handle on a batching backend)
    serves an LLM buyer instead of a backend of its own."""
    params = dict(snapshot.get("params") or {})
    spec = llm_spec(snapshot)
    if spec is not None:
        params["backend"] = backend if backend is not None else spec.backend
        params["model"] = spec.model
        if spec.options and backend is None:
            params["backend_options"] = dict(spec.options)
        elif backend is not None:
            params.pop("backend_options", None)
    return get_policy(snapshot["policy"], seed=seed, **params)


def replay_seed(seed: int, replay: int) -> int:
    """The buyer's own seed on a replay: the episode seed itself for the first, then a
    different, reproducible one per replay."""
    if replay == 0:
        return seed
    return zlib.crc32(f"{seed}/replay/{replay}".encode()) + (seed % 2**20) * 2**32


def world_fingerprint(obs: Observation) -> str:
    text = json.dumps(obs.to_dict(), sort_keys=True, default=str)
    return hashlib.sha1(text.encode()).hexdigest()[:16]


class Timed:
    """A policy for one episode, playing its replay's seed, with each decision timed."""

    def __init__(self, inner: Policy, replay: int = 0) -> None:
        self.inner = inner
        self.replay = replay
        self.decisions: list[float] = []
        self.world: str | None = None
        self.started = self.finished = time.perf_counter()

    def reset(self, seed: int | None = None) -> None:
        self.inner.reset(None if seed is None else replay_seed(seed, self.replay))
        self.decisions, self.world = [], None
        self.started = self.finished = time.perf_counter()

    def act(self, obs: Observation) -> dict[str, Any]:
        if self.world is None:
            self.world = world_fingerprint(obs)
        t0 = time.perf_counter()
        action = self.inner.act(obs)
        self.finished = time.perf_counter()
        self.decisions.append(self.finished - t0)
        return action

    @property
    def seconds(self) -> float:
        return self.finished - self.started

    def __getattr__(self, name: str) -> Any:  # name, stats, last_decision
        return getattr(self.inner, name)
