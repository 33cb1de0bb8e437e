"""A key/value cache that grows in place: transformers' ``DynamicLayer`` concatenates the
whole cache with each step's keys and values (``torch.cat``), so every decoding pass
copies all the context's keys and values; this layer writes a step's tokens into spare
room of a larger buffer and keeps ``keys``/``values`` as views of its filled part, so a
pass copies only its own tokens. A full buffer is replaced by one with room for an
eighth more (at least ``MIN_ROOM`` tokens: a whole reply, usually), so a batch of long
prompts costs little memory beyond its cache. The values and shapes the attention reads
are exactly ``DynamicLayer``'s.
"""

from __future__ import annotations

from typing import Any

MIN_ROOM = 256  # tokens of spare room at least when a buffer is (re)allocated


def growing_cache(config: Any) -> Any:
    """A ``DynamicCache`` for ``config`` whose plain layers grow in place (sliding or
    other layers are left as they are)."""
    from transformers import DynamicCache
    from transformers.cache_utils import DynamicLayer

    cache = DynamicCache(config=config)
    cache.layers = [
        _layer_class()() if type(layer) is DynamicLayer else layer for layer in cache.layers
    ]
    return cache


def is_plain(layer: Any) -> bool:
    """Whether a cache layer is one growing sequence (croppable, spliceable)."""
    from transformers.cache_utils import DynamicLayer

    return type(layer) in (DynamicLayer, _layer_class())


def keep_rows(cache: Any, rows: list[int], start: int) -> None:
    """Keeps only batch rows ``rows`` (in that order) of a cache of plain layers, from
    column ``start`` on (columns left of it must be masked out for every kept row): a
    decoding batch sheds finished rows and their padding. Each layer gets a fresh buffer
    with spare room, so the next steps write in place again."""
    for layer in cache.layers:
        if not layer.is_initialized:
            continue
        keys, values = layer.keys, layer.values
        length = keys.shape[-2] - start
        size = (len(rows), keys.shape[1], length + max(MIN_ROOM, length // 8), keys.shape[-1])
        new_keys, new_values = keys.new_empty(size), values.new_empty(size)
        for i, row in enumerate(rows):
            new_keys[i, :, :length] = keys[row, :, start:]
            new_values[i, :, :length] = values[row, :, start:]
        layer.keys, layer.values = new_keys[..., :length, :], new_values[..., :length, :]
        if type(layer) is _layer_class():
            layer._room = (new_keys, new_values)


_CLASS: list[type] = []


def _layer_class() -> type:
    """The layer class, made on first use (transformers is imported lazily)."""
    if _CLASS:
        return _CLASS[0]
    from transformers.cache_utils import DynamicLayer

    class GrowingLayer(DynamicLayer):
        def lazy_initialization(self, key_states: Any, value_states: Any) -> None:
            super().lazy_initialization(key_states, value_states)
            self._room: tuple[Any, Any] | None = None

        def update(
            self, key_states: Any, value_states: Any, *args: Any, **kwargs: Any
        ) -> tuple[Any, Any]:
            if not self.is_initialized:
                self.lazy_initialization(key_states, value_states)
            n, add = self.get_seq_length(), key_states.shape[-2]
            if not self._fits(key_states, n + add):
                length = n + add
                size = (*key_states.shape[:-2], length + max(MIN_ROOM, length // 8))
                keys = key_states.new_empty((*size, key_states.shape[-1]))
                values = value_states.new_empty((*size, value_states.shape[-1]))
                if n:
                    keys[..., :n, :] = self.keys
                    values[..., :n, :] = self.values
                self._room = (keys, values)
            assert self._room is not None
            keys, values = self._room
            keys[..., n : n + add, :] = key_states
            values[..., n : n + add, :] = value_states
            self.keys, self.values = keys[..., : n + add, :], values[..., : n + add, :]
            return self.keys, self.values

        def _fits(self, states: Any, length: int) -> bool:
            """Whether the buffer still backs ``keys`` (crop keeps views; anything that
            replaced them does not) and has room for ``length`` tokens."""
            if self._room is None:
                return False
            keys = self._room[0]
            return (
                keys.shape[:-2] == states.shape[:-2]
                and keys.shape[-2] >= length
                and (self.get_seq_length() == 0 or self.keys.data_ptr() == keys.data_ptr())
            )

    GrowingLayer.__qualname__ = GrowingLayer.__name__
    GrowingLayer.__module__ = __name__
    _CLASS.append(GrowingLayer)
    return GrowingLayer
