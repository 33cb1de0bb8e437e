"""bench/train.py's report: cells from played episodes, with what each buyer played and
its per-seed scores; paired differences over the same seeds; the table and curves."""

from __future__ import annotations

import argparse
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


def test_a_models_cells_carry_its_play_throughput(tmp_path: Path) -> None:
    """A model's row counts the tokens its play computed and wrote (from its backend's
    own counts), and the table shows them per second; rule buyers show n/a."""
    from bench.train import evaluate
    from negotiation.training.report import Cell
    from tests.llm_models import build_tiny_model

    folder = build_tiny_model(tmp_path / "tiny", arch="llama", max_positions=8192)
    args = argparse.Namespace(
        play=None, eval_seeds=2, eval_presets=["bilateral"], device="cpu", max_prompt_chars=3000
    )
    table = evaluate(args, {"tiny": folder})
    cells = {c["policy"]: Cell.model_validate(c) for c in table}
    tiny = cells["tiny"]
    assert tiny.prefill_tokens > 0 and tiny.decode_tokens > 0 and tiny.wall_s > 0
    assert tiny.decode_per_s == tiny.decode_tokens / tiny.wall_s
    assert cells["expert"].decode_per_s is None
    rows = {line.split(" | ")[1]: line for line in markdown(table).splitlines()[2:]}
    assert rows["tiny"].endswith(f"{tiny.prefill_per_s:.0f}, {tiny.decode_per_s:.1f} |")
    assert rows["expert"].endswith("| n/a |")
