"""The training bench's report: what ``bench/train.py`` writes and the Training page reads.

One pydantic model per record, so the file is checked where it is written and where it
is read: a file the bench did not write, or one an older bench wrote in another shape, is
a clear ``ReportError`` on the page, never a failed page.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

REPORT_DIR = "bench_train"  # under the data directory: the bench's default --out
RESULTS_FILE = "results.json"
CURVES_FILE = "curves.png"


class ReportError(ValueError):
    """A bench report that exists but cannot be read."""


class _Record(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)


class ScoreCI(_Record):
    """A mean episode score (0-1) with its bootstrap 95 % CI; None where no episode ran."""

    mean: float | None
    ci_low: float | None
    ci_high: float | None


class Cell(_Record):
    """One buyer on one preset, over the held-out seeds. Rates are per episode (deal
    rate), per decision (invalid actions, fallbacks) or the buyer's share of the surplus
    on the episodes with a deal (None: no deal)."""

    preset: str
    policy: str
    episodes: int
    wall_s: float  # seconds of play (0 for rule policies, timed only for models)
    score: ScoreCI
    deal_rate: float | None
    buyer_share: float | None
    invalid_action_rate: float | None
    fallback_rate: float | None
    actions: dict[str, int] = {}  # action type -> times played
    scores: dict[str, float] = {}  # seed -> score, for paired differences
    # A model's play: prompt tokens computed (its cache's reuse left out) and reply
    # tokens written, all episodes together over wall_s; 0 for rule policies.
    prefill_tokens: int = 0
    decode_tokens: int = 0

    @property
    def prefill_per_s(self) -> float | None:
        """Prompt tokens computed per second of play (None: no model, or not timed)."""
        return self.prefill_tokens / self.wall_s if self.prefill_tokens and self.wall_s else None

    @property
    def decode_per_s(self) -> float | None:
        """Reply tokens written per second of play (None: no model, or not timed)."""
        return self.decode_tokens / self.wall_s if self.decode_tokens and self.wall_s else None


class Difference(_Record):
    """``player``'s mean score minus ``against``'s over their common seeds (``n``), with
    a paired bootstrap 95 % CI."""

    preset: str
    player: str
    against: str
    mean: float | None
    ci_low: float | None
    ci_high: float | None
    n: int


class Report(_Record):
    """One bench run: its arguments, load, times, table, differences and curves."""

    args: dict[str, Any]
    load_at_start: tuple[float, float, float]  # load averages (1, 5, 15 min)
    load_at_end: tuple[float, float, float]
    train_s: float
    eval_s: float
    table: list[Cell]
    differences: list[Difference] = []
    curves: dict[str, list[dict[str, float]]] = {}  # "sft"/"grpo" -> per-step metrics


def write_report(folder: Path, report: dict[str, Any]) -> Report:
    """Check ``report`` against Report and write it to folder/RESULTS_FILE."""
    checked = Report.model_validate(report)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / RESULTS_FILE).write_text(checked.model_dump_json(indent=2))
    return checked


def read_report(folder: Path) -> Report | None:
    """The report in folder/RESULTS_FILE; None when there is none. ReportError when it
    cannot be read or is not a Report."""
    path = folder / RESULTS_FILE
    name = f"{folder.name}/{RESULTS_FILE}"  # named without the server's own path
    try:
        text = path.read_bytes()  # bad bytes fail validation, as bad JSON does
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise ReportError(f"{name} cannot be read: {exc.strerror}") from exc
    try:
        return Report.model_validate_json(text)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "the file"
        msg = f"{name} is not a training bench report ({where}: {first['msg']})"
        raise ReportError(msg) from None
