"""A training bench report as bench/train.py writes it, for the Training page's tests."""

from __future__ import annotations

from pathlib import Path

from bench.train import HELD_OUT, cell, differences, plot
from negotiation import get_policy, run_episode
from negotiation.training.report import CURVES_FILE, Report, write_report

BUYERS = ("expert", "always_accept", "random")
PAIRS = (("expert", "always_accept"), ("always_accept", "random"))


def plant_bench_report(folder: Path, *, seeds: int = 4) -> Report:
    """The bench's own report and curves in ``folder``, from rule buyers played on its
    first ``seeds`` held-out seeds of bilateral (the trained models' rows take the same
    cells; training is left out, its curves made up)."""
    table = [
        cell(
            "bilateral",
            name,
            [
                run_episode("bilateral", get_policy(name, seed=s), s)
                for s in range(HELD_OUT, HELD_OUT + seeds)
            ],
            0.0,
        )
        for name in BUYERS
    ]
    curves = {
        "sft": [
            {"step": k, "loss": 0.4 / k, "learning_rate": 1e-4 * (1 - k / 5), "seconds": 20.0 * k}
            for k in range(1, 5)
        ],
        "grpo": [],
    }
    report = write_report(
        folder,
        {
            "args": {
                "train_episodes": 2,
                "train_presets": ["bilateral"],
                "sft_steps": 4,
                "grpo_steps": 0,
                "eval_seeds": seeds,
                "device": "cpu",
                "lora": False,
            },
            "load_at_start": [1.0, 1.0, 1.0],
            "load_at_end": [1.5, 1.2, 1.0],
            "train_s": 80.0,
            "eval_s": 1.0,
            "curves": curves,
            "table": table,
            "differences": differences(table, PAIRS),
        },
    )
    plot(curves, folder / CURVES_FILE)
    return report
