"""Another commit's source tree beside this checkout, for benches that time the code as it
was against the code as it is in one run (no stash, no checkout: this tree is untouched),
and the one way they run a measuring script inside either tree."""

from __future__ import annotations

import json
import subprocess
import sys
import tarfile
from io import BytesIO
from pathlib import Path
from typing import Any

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


def run_json(tree: Path, script: str, *args: object) -> Any:
    """Run ``script`` (Python source) in ``tree`` with this interpreter, its packages the
    tree's own (``-c`` puts the working folder first on the path), and return the JSON
    value its last line of output prints."""
    out = subprocess.run(
        [sys.executable, "-c", script, *map(str, args)],
        cwd=tree,
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    return json.loads(out.strip().splitlines()[-1])
