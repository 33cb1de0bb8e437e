"""Give freed tensors back to the operating system in a CPU model process (glibc only).

A CPU model lane allocates and frees megabytes per forward pass from many threads: key/value
caches copied per batch, per-layer activations, logits. glibc serves an allocation above
its mmap threshold with its own mapping, returned to the system when freed; but by
default the threshold rises to the size of each such block freed (up to 32 MiB), after
which blocks of that size come from the threads' heap arenas. Freed there, they stay in
the process wherever a live small block sits above them, so resident memory only grows
while every episode's own memory stays bounded. ``return_freed_memory`` fixes the
threshold (which also turns that rise off), so large blocks are always mapped and
unmapped. The cost is a page-fault pass over each new large block.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import threading

M_MMAP_THRESHOLD = -3  # glibc's mallopt parameter number (malloc.h)
MMAP_THRESHOLD_BYTES = 128 * 1024  # glibc's own starting value
_done = False
_lock = threading.Lock()


def return_freed_memory() -> bool:
    """Fix the process's mmap threshold at 128 KiB, once; True where glibc took it (False
    on other C libraries, where nothing changes)."""
    global _done
    with _lock:
        if _done:
            return True
        name = ctypes.util.find_library("c")
        if name is None:
            return False
        try:
            mallopt = ctypes.CDLL(name).mallopt
        except (OSError, AttributeError):  # musl and others have no mallopt
            return False
        mallopt.argtypes, mallopt.restype = [ctypes.c_int, ctypes.c_int], ctypes.c_int
        _done = mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD_BYTES) == 1
        return _done
