"""Give freed tensors back to the operating system in a CPU model process (glibc only).

A CPU model lane allocates and frees megabytes per forward pass from many threads: key/value
caches copied per batch, per-layer activations, logits. glibc serves an allocation above
its mmap threshold with its own mapping, returned to the system when freed; but by
default the threshold rises to the size of each such block freed (up to 32 MiB), after
which blocks of that size come from the threads' heap arenas. Freed there, they stay in
the process wherever a live small block sits above them, so resident memory only grows
while every episode's own memory stays bounded.

Two remedies, one per function:

- ``release_freed_memory`` (what the transformers backend calls after each call on CPU):
  ``malloc_trim(0)`` hands back every whole free page in every arena. Within a call,
  freed blocks are reused from the heap as glibc intends; the pages are faulted in again
  once per call, not once per token.
- ``fix_mmap_threshold``: a fixed threshold (which also turns the rise off), so large
  blocks are always mapped and unmapped: no growth, but a page-fault pass over every
  large block, at every decode step (bench/llm_memory.py compares the three rules).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
from typing import Any

M_MMAP_THRESHOLD = -3  # glibc's mallopt parameter number (malloc.h)
MMAP_THRESHOLD_BYTES = 128 * 1024  # glibc's own starting value


@functools.cache
def _libc() -> Any | None:
    """The C library, where it is glibc (has malloc_trim and mallopt); else None."""
    name = ctypes.util.find_library("c")
    if name is None:
        return None
    try:
        libc = ctypes.CDLL(name)
        for fn in (libc.malloc_trim, libc.mallopt):  # musl and others have neither
            fn.restype = ctypes.c_int
    except (OSError, AttributeError):
        return None
    libc.malloc_trim.argtypes = [ctypes.c_size_t]
    libc.mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    return libc


def release_freed_memory() -> bool:
    """Return every whole free page of the heap arenas to the system; True where glibc did
    it (False on other C libraries, where nothing changes). Safe from any thread."""
    libc = _libc()
    if libc is None:
        return False
    libc.malloc_trim(0)
    return True


def fix_mmap_threshold(threshold: int = MMAP_THRESHOLD_BYTES) -> bool:
    """Fix the process's mmap threshold (process-wide and one-way); True where glibc took
    it."""
    libc = _libc()
    return libc is not None and libc.mallopt(M_MMAP_THRESHOLD, threshold) == 1
