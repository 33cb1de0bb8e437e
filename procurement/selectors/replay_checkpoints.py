"""Checkpoints of replayed engines, so the public state after step N costs a replay of at
most ``CHECKPOINT_EVERY`` actions once this process has replayed the episode that far.

A checkpoint is the engine pickled after the episode's stored actions 0..s, taken every
``CHECKPOINT_EVERY`` actions while a replay passes. Stored decisions never change once
stored (an attempt only appends, fenced by its claim), so a checkpoint stays true for the
steps it covers even while the episode still plays. Its key holds the episode's id, seed
and creation time (an id reused after a delete is another episode) and a digest of the
world key it was drawn under (procurement/worlds.py): a sealed episode resumes only from
checkpoints of its own sealed world, and a changed server key is another world.

Only rule-only engines are checkpointed: a field persona's negmas sessions are keyed by
object identity, so a copied engine would not go on as the original, and language-model
suppliers answer from the episode's record (worlds.replay_env), which a copy would not
carry. Those episodes replay from step 0, engine time only: no model runs.

Per process, least recently used first out, bounded by the checkpoints' total bytes.
"""

from __future__ import annotations

import hashlib
import pickle
import threading
from collections import OrderedDict
from typing import TYPE_CHECKING, Any

from procurement.models import Decision
from procurement.worlds import REPLAY_FIELDS, episode_world_key, replay_env, replay_step

if TYPE_CHECKING:
    from negotiation import Observation, ProcurementEnv
    from procurement.models import Episode

# Actions between two checkpoints: the most one warm state request replays.
CHECKPOINT_EVERY = 250
# The most bytes all checkpoints of this process hold together (one is tens of kB).
CHECKPOINT_BYTES = 64 * 1024 * 1024

CheckpointKey = tuple[int, int, str, bytes]


class CheckpointStore:
    """step -> pickled engine per episode key, least recently used out beyond ``limit``
    bytes. Thread-safe: the ASGI server answers requests from a thread pool."""

    def __init__(self, limit: int = CHECKPOINT_BYTES) -> None:
        self.limit = limit
        self.size = 0
        self._lock = threading.Lock()
        self._items: OrderedDict[tuple[CheckpointKey, int], bytes] = OrderedDict()
        self._steps: dict[CheckpointKey, set[int]] = {}
        # Engine steps replayed through this store, for tests and benches that count work.
        self.replayed_steps = 0

    def nearest(self, key: CheckpointKey, step: int) -> tuple[int, bytes] | None:
        """The latest checkpoint at or before ``step`` (the last action it covers), if any."""
        with self._lock:
            steps = [s for s in self._steps.get(key, ()) if s <= step]
            if not steps:
                return None
            best = max(steps)
            self._items.move_to_end((key, best))
            return best, self._items[(key, best)]

    def put(self, key: CheckpointKey, step: int, blob: bytes) -> None:
        with self._lock:
            if (key, step) in self._items or len(blob) > self.limit:
                return
            self._items[(key, step)] = blob
            self._steps.setdefault(key, set()).add(step)
            self.size += len(blob)
            while self.size > self.limit:
                (old_key, old_step), old = self._items.popitem(last=False)
                self.size -= len(old)
                self._steps[old_key].discard(old_step)
                if not self._steps[old_key]:
                    del self._steps[old_key]

    def clear(self) -> None:
        with self._lock:
            self._items.clear()
            self._steps.clear()
            self.size = 0


STORE = CheckpointStore()


def _checkpoint_key(episode: Episode) -> CheckpointKey:
    world_key = episode_world_key(episode)
    digest = b"" if world_key is None else hashlib.sha256(world_key).digest()
    return (episode.pk, episode.seed, episode.created_at.isoformat(), digest)


def _checkpointable(env: ProcurementEnv) -> bool:
    """Rule-only engines: every supplier's state lives in the world (see module doc)."""
    return not env.supplier_policies


def observation_after(episode: Episode, step: int) -> Observation:
    """What the buyer saw after stored decision ``step`` (-1: before the first), replayed
    from the nearest checkpoint at or before it (or from a fresh engine)."""
    key = _checkpoint_key(episode)
    start = -1
    env: Any = None
    replies = None
    found = STORE.nearest(key, step)
    if found is not None:  # only rule-only engines are kept: no recorded replies
        start, blob = found
        env = pickle.loads(blob)
    else:
        env, replies = replay_env(episode)
    keep = _checkpointable(env)
    records = (
        Decision.objects.filter(episode=episode, step__gt=start, step__lte=step)
        .order_by("step")
        .values_list(*REPLAY_FIELDS)
    )
    for s, record in enumerate(records.iterator(chunk_size=2000), start + 1):
        replay_step(env, replies, record)
        STORE.replayed_steps += 1
        if keep and (s + 1) % CHECKPOINT_EVERY == 0:
            STORE.put(key, s, pickle.dumps(env, protocol=pickle.HIGHEST_PROTOCOL))
    return env.observation()
