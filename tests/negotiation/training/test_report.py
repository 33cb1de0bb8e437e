"""The training bench's report: written only when it is a Report, read back the same, and
any other file a clear ReportError that names it without the server's path."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pydantic import ValidationError

from negotiation.training.report import RESULTS_FILE, Report, ReportError, read_report, write_report

CELL = {
    "preset": "bilateral",
    "policy": "sft",
    "episodes": 2,
    "wall_s": 12.5,
    "score": {"mean": 0.7, "ci_low": 0.6, "ci_high": 0.8},
    "deal_rate": 1.0,
    "buyer_share": 0.4,
    "invalid_action_rate": 0.0,
    "fallback_rate": None,
    "actions": {"negotiate": 16, "award_contract": 2},
    "scores": {"100000": 0.6, "100001": 0.8},
}
REPORT = {
    "args": {"sft_steps": 4, "train_presets": ["bilateral"]},
    "load_at_start": [1.0, 0.5, 0.2],
    "load_at_end": [2.0, 1.0, 0.4],
    "train_s": 100.0,
    "eval_s": 50.0,
    "table": [CELL],
    "differences": [
        {"preset": "bilateral", "player": "sft", "against": "smollm2", "mean": 0.7,
         "ci_low": 0.6, "ci_high": 0.8, "n": 2}
    ],
    "curves": {"sft": [{"step": 1, "loss": 0.5, "seconds": 20.0}], "grpo": []},
}  # fmt: skip


def test_a_written_report_reads_back_the_same(tmp_path: Path) -> None:
    written = write_report(tmp_path / "bench_train", REPORT)
    assert read_report(tmp_path / "bench_train") == written
    assert written.table[0].actions == {"negotiate": 16, "award_contract": 2}
    assert written.differences[0].n == 2


def test_no_report_is_none(tmp_path: Path) -> None:
    assert read_report(tmp_path) is None


def test_a_report_that_is_not_one_is_refused_before_anything_is_written(tmp_path: Path) -> None:
    with pytest.raises(ValidationError):
        write_report(tmp_path / "out", {**REPORT, "table": [{**CELL, "episodes": "many"}]})
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    ("content", "says"),
    [
        (b"{not json", "Invalid JSON"),
        (json.dumps({**REPORT, "train_s": "slow"}).encode(), "train_s"),
        (json.dumps({**REPORT, "table": [{**CELL, "score": None}]}).encode(), "table.0.score"),
        (json.dumps([1, 2]).encode(), "the file"),
        (b"\xff\xfe\x00garbage", "the file"),
    ],
)
def test_a_bad_file_is_a_report_error_naming_it(tmp_path: Path, content: bytes, says: str) -> None:
    folder = tmp_path / "bench_train"
    folder.mkdir()
    (folder / RESULTS_FILE).write_bytes(content)
    with pytest.raises(ReportError) as caught:
        read_report(folder)
    message = str(caught.value)
    assert message.startswith(f"bench_train/{RESULTS_FILE} is not a training bench report")
    assert says in message and str(tmp_path) not in message


def test_an_unreadable_report_is_a_report_error(tmp_path: Path) -> None:
    (tmp_path / RESULTS_FILE).mkdir()  # a folder where the file should be
    with pytest.raises(ReportError, match="cannot be read"):
        read_report(tmp_path)


def test_older_reports_without_the_new_records_still_read(tmp_path: Path) -> None:
    old = {k: v for k, v in REPORT.items() if k not in ("differences", "curves")}
    old["table"] = [{k: v for k, v in CELL.items() if k not in ("actions", "scores")}]
    (tmp_path / RESULTS_FILE).write_text(json.dumps(old))
    report = read_report(tmp_path)
    assert isinstance(report, Report) and report.differences == [] and report.table[0].actions == {}
