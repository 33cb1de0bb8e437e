"""Key/value caches of conversations, so a chat that grows turn by turn is not encoded
from its first token at every turn (the transformers backend).

An entry is one encoded token sequence (a prompt and the reply generated after it) with
its keys and values, per layer. A new prompt may reuse the longest common token prefix it
shares with any entry: its own conversation's (the usual case: the last prompt, the reply,
then a new user message), another conversation's (the same rules text), or a shared
prefix (a system message computed once per process). Only the tokens after that prefix
are computed. Entries are never changed once stored: a reused prefix is copied into the
batch, and a conversation's entry is replaced by the newer one after each turn.

Memory is bounded by counts: conversations are evicted least recently used first beyond
``max_conversations``, shared prefixes beyond ``max_prefixes``, and a caller that ends a
conversation releases it at once with ``forget``. The store has its own lock, so
``forget`` never waits for a running generation.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)
class KVEntry:
    """Token ids (1-D, on CPU) and, per layer, (keys, values) of shape
    [heads, tokens, head_dim] for exactly those tokens."""

    ids: Any
    layers: tuple[tuple[Any, Any], ...]

    def __len__(self) -> int:
        return int(self.ids.numel())

    def common_prefix(self, ids: Any) -> int:
        """How many leading tokens ``ids`` shares with this entry."""
        n = min(len(self), int(ids.numel()))
        differ = (self.ids[:n] != ids[:n]).nonzero()
        return int(differ[0, 0]) if len(differ) else n


@dataclass(frozen=True, slots=True)
class Reuse:
    """What a prompt starts from: the first ``tokens`` of ``entry`` (0: nothing)."""

    entry: KVEntry | None = None
    tokens: int = 0


class KVStore:
    """Entries by conversation key (LRU) plus a few shared prefixes (LRU)."""

    def __init__(self, max_conversations: int, max_prefixes: int) -> None:
        self.max_conversations = max_conversations
        self.max_prefixes = max_prefixes
        self._conversations: OrderedDict[str, KVEntry] = OrderedDict()
        self._prefixes: OrderedDict[tuple[int, ...], KVEntry] = OrderedDict()
        self._lock = threading.Lock()

    def best(self, key: str | None, ids: Any) -> Reuse:
        """The entry sharing the longest prefix with ``ids``; ``key``'s own counts as
        used (least recently used goes first)."""
        with self._lock:
            if key is not None and key in self._conversations:
                self._conversations.move_to_end(key)
            best = Reuse()
            for entry in (*self._conversations.values(), *self._prefixes.values()):
                n = entry.common_prefix(ids)
                if n > best.tokens:
                    best = Reuse(entry, n)
            return best

    def put(self, key: str, entry: KVEntry) -> None:
        self._put(self._conversations, key, entry, self.max_conversations)

    def put_prefix(self, entry: KVEntry) -> None:
        self._put(self._prefixes, tuple(entry.ids.tolist()), entry, self.max_prefixes)

    def _put(self, entries: OrderedDict, name: Any, entry: KVEntry, limit: int) -> None:
        with self._lock:
            entries[name] = entry
            entries.move_to_end(name)
            while len(entries) > limit:
                entries.popitem(last=False)

    def forget(self, key: str) -> None:
        with self._lock:
            self._conversations.pop(key, None)

    def clear(self) -> None:
        with self._lock:
            self._conversations.clear()
            self._prefixes.clear()

    def conversations(self) -> dict[str, int]:
        """Tokens cached per conversation, least recently used first."""
        with self._lock:
            return {key: len(entry) for key, entry in self._conversations.items()}

    def tokens(self) -> int:
        """Tokens held in all entries: memory is this times the model's bytes per token."""
        with self._lock:
            entries = (*self._conversations.values(), *self._prefixes.values())
            return sum(len(e) for e in entries)
