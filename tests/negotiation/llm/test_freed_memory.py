"""A CPU model process gives freed tensors back to the system (negotiation/llm/freed_memory).

Each case runs in a fresh interpreter, since the setting is process-wide and one-way. The
pattern is the model lane's in miniature: after a large block was freed (glibc then raises
its mmap threshold to that size), blocks of a few MiB are allocated between live smaller
ones, then freed. Without the fixed threshold they stay resident; with it they go back.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

SCRIPT = """
import sys
import torch
from negotiation.llm.freed_memory import return_freed_memory

def rss_mib():
    for line in open("/proc/self/status"):
        if line.startswith("VmRSS"):
            return int(line.split()[1]) // 1024

if sys.argv[1] == "fixed":
    assert return_freed_memory()
torch.ones(8 << 20, dtype=torch.uint8)  # freed at once: the threshold rises to 8 MiB
base = rss_mib()
blocks, live = [], []
for _ in range(100):
    blocks.append(torch.ones(2 << 20, dtype=torch.uint8))  # 2 MiB, freed below
    live.append(torch.ones(100 << 10, dtype=torch.uint8))  # 100 KiB, kept: 10 MiB in all
del blocks
print(rss_mib() - base)
"""


def kept_mib(mode: str) -> int:
    out = subprocess.run(
        [sys.executable, "-c", SCRIPT, mode], capture_output=True, text=True, check=True
    )
    return int(out.stdout.strip().splitlines()[-1])


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc and /proc only")
def test_freed_blocks_go_back_to_the_system_once_the_threshold_is_fixed() -> None:
    assert kept_mib("default") > 150  # the 200 MiB freed stays resident: the leak's shape
    assert kept_mib("fixed") < 30  # only the 10 MiB still alive (and some slack)
