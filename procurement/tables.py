"""Plain-text tables for the command line."""

from __future__ import annotations


def _fmt(value) -> str:
    return "—" if value is None else f"{value:.3f}"


def format_leaderboard(rows: list[dict]) -> str:
    header = (
        f"{'scenario':<22} {'policy':<16} {'n':>5} {'score':>7} {'95% CI':>17} "
        f"{'deal':>6} {'b.share':>7} {'m.loss':>6}"
    )
    lines = [header, "-" * len(header)]
    for r in rows:
        s = r["score"]
        ci = f"[{_fmt(s['ci_low'])}, {_fmt(s['ci_high'])}]"
        lines.append(
            f"{r['scenario']:<22} {r['policy']:<16} {r['episodes']:>5} {_fmt(s['mean']):>7} "
            f"{ci:>17} {_fmt(r.get('deal_rate')):>6} {_fmt(r.get('buyer_share')):>7} "
            f"{_fmt(r.get('mutual_loss')):>6}"
        )
    if not rows:
        lines.append("(no finished episodes)")
    return "\n".join(lines)
