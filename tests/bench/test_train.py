"""bench/train.py's report: cells from played episodes, with what each buyer played and
its per-seed scores; paired differences over the same seeds; the table and curves."""

from __future__ import annotations

from pathlib import Path

from bench.train import markdown, markdown_differences
from negotiation.training.report import CURVES_FILE, read_report
from tests.training_bench import plant_bench_report


def test_the_report_pairs_seeds_and_counts_actions(tmp_path: Path) -> None:
    report = plant_bench_report(tmp_path, seeds=4)
    assert read_report(tmp_path) == report
    cells = {c.policy: c for c in report.table}
    assert set(cells["expert"].scores) == {str(s) for s in range(100_000, 100_004)}
    # every episode ends in one award, then a defer (the episode is over)
    assert {c.actions["award_contract"] for c in (cells["expert"], cells["always_accept"])} == {4}
    assert cells["expert"].actions["negotiate"] > cells["always_accept"].actions["negotiate"]
    diffs = {(d.player, d.against): d for d in report.differences}
    expert_gain = diffs[("expert", "always_accept")]
    assert expert_gain.n == 4 and expert_gain.ci_low > 0  # the expert beats accepting at once
    mean = (
        sum(cells["expert"].scores.values()) / 4 - sum(cells["always_accept"].scores.values()) / 4
    )
    assert abs(expert_gain.mean - mean) < 1e-12
    table = markdown([c.model_dump() for c in report.table])
    assert "award_contract 4" in table and "| bilateral | expert | 4 |" in table
    assert "expert - always_accept" in markdown_differences(
        [d.model_dump() for d in report.differences]
    )
    assert (tmp_path / CURVES_FILE).read_bytes().startswith(b"\x89PNG")
