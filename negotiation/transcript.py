"""Readable transcript of an episode (for `manage.py run_episode`)."""

from __future__ import annotations

from .runner import EpisodeResult


def _describe(action) -> str:
    if not isinstance(action, dict):
        return f"(malformed) {action}"
    at = action.get("action_type", "?")
    parts = [f"{k}={v}" for k, v in action.items() if k not in ("action_type", "rationale")]
    return f"{at}(" + ", ".join(parts) + ")"


def format_transcript(result: EpisodeResult, show_tells: bool = False) -> str:
    lines = [
        f"Episode: scenario={result.scenario_name} policy={result.policy_name} seed={result.seed}",
        "=" * 78,
    ]
    week = None
    for s in result.steps:
        if s.week != week:
            week = s.week
            lines.append(f"-- week {week} " + "-" * 66)
        mark = "ok " if s.valid else "ERR"
        lines.append(
            f"[{s.step:3d}] {mark} {_describe(s.action)}  reward={s.reward:+.4f} "
            f"score={s.running_score:.4f}"
        )
        if s.error:
            lines.append(f"      error {s.error['code']}: {s.error['message']}")
        if s.response:
            r = s.response
            price = "" if r.get("price") is None else f" at {r['price']:,.2f}"
            lines.append(f'      {r["supplier_id"]} -> {r["response"]}{price}: "{r["message"]}"')
            if show_tells:
                tells = ", ".join(f"{k}={v:.2f}" for k, v in r["tells"].items())
                lines.append(f"      tells: {tells}")
        for e in s.events:
            if e["kind"] != "week_start":
                lines.append(f"      * [{e['kind']}] {e['text']}")
    lines.append("=" * 78)
    lines.append(f"Final score: {result.score:.4f}")
    lines.append("Metrics:")
    width = max(len(k) for k in result.metrics)
    for k, v in result.metrics.items():
        val = f"{v:.4f}" if isinstance(v, float) else str(v)
        lines.append(f"  {k.ljust(width)}  {val}")
    return "\n".join(lines)
