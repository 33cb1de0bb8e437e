"""Another commit's source tree beside this checkout, for benches that time the code as it
was against the code as it is in one run (no stash, no checkout: this tree is untouched)."""

from __future__ import annotations

import subprocess
import tarfile
from io import BytesIO
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def export(ref: str, into: Path) -> Path:
    """The tree of ``ref`` (``git archive``) unpacked into ``into``; returns ``into``."""
    into.mkdir(parents=True, exist_ok=True)
    blob = subprocess.run(
        ["git", "-C", str(ROOT), "archive", "--format=tar", ref],
        check=True,
        capture_output=True,
    ).stdout
    with tarfile.open(fileobj=BytesIO(blob)) as tar:
        tar.extractall(into, filter="data")
    return into
