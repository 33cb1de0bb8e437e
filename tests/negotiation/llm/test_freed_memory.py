"""A CPU model process gives freed tensors back to the system (negotiation/llm/freed_memory).

Each rule runs in a fresh interpreter, since the threshold is process-wide and one-way. The
pattern is the model lane's in miniature: after a large block was freed (glibc then raises
its mmap threshold to that size), blocks of a few MiB are allocated between live smaller
ones, then freed. Under glibc's own rule they stay resident; trimmed, or under a fixed
threshold, they go back.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from negotiation.llm import ChatMessage, ChatRequest

SCRIPT = """
import sys
import torch
from negotiation.llm.freed_memory import fix_mmap_threshold, release_freed_memory

def rss_mib():
    for line in open("/proc/self/status"):
        if line.startswith("VmRSS"):
            return int(line.split()[1]) // 1024

if sys.argv[1] == "fixed":
    assert fix_mmap_threshold()
torch.ones(8 << 20, dtype=torch.uint8)  # freed at once: the threshold rises to 8 MiB
base = rss_mib()
blocks, live = [], []
for _ in range(100):
    blocks.append(torch.ones(2 << 20, dtype=torch.uint8))  # 2 MiB, freed below
    live.append(torch.ones(100 << 10, dtype=torch.uint8))  # 100 KiB, kept: 10 MiB in all
del blocks
if sys.argv[1] == "trimmed":
    assert release_freed_memory()
print(rss_mib() - base)
"""

linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc and /proc")


def kept_mib(rule: str) -> int:
    out = subprocess.run(
        [sys.executable, "-c", SCRIPT, rule], capture_output=True, text=True, check=True
    )
    return int(out.stdout.strip().splitlines()[-1])


@linux_only
def test_freed_blocks_go_back_to_the_system_when_trimmed_or_under_a_fixed_threshold() -> None:
    assert kept_mib("default") > 150  # the 200 MiB freed stays resident: the leak's shape
    assert kept_mib("trimmed") < 30  # only the 10 MiB still alive (and some slack)
    assert kept_mib("fixed") < 30


@linux_only
def test_the_cpu_backend_trims_after_every_call(tiny_backend, monkeypatch) -> None:
    import negotiation.llm.transformers_backend as tb

    trims: list[bool] = []
    monkeypatch.setattr(tb, "release_freed_memory", lambda: trims.append(True) or True)
    request = ChatRequest(messages=[ChatMessage("user", "Say hi.")], max_tokens=3)
    tiny_backend.generate([request, request])
    assert trims == [True]  # one call of two rows: one trim, after it
