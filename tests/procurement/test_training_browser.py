"""One training run started from the Training page in headless Chromium: the form, live
progress over the run's stream, loss and learning-rate curves, the log tail, and at the
end a link to the registered policy that opens the episode form with it. On a tiny
local model; screenshots at 1366 and 390 px (data/screenshots/)."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator

import pytest

from negotiation.training.report import REPORT_DIR
from tests.browser import SETUP, EmbeddedSite, has_horizontal_scroll, login, screenshot
from tests.training_bench import plant_bench_report

pytestmark = [pytest.mark.browser, pytest.mark.xdist_group("training_browser")]
pytest.importorskip("trl")

TRAINING_SETUP = (
    SETUP
    + """
import os
from pathlib import Path
from procurement.models import PolicyConfig, Scenario
from procurement.services.policies import policy_create
from procurement.services.sweep_runner import sweep_cells_run, sweep_start
from procurement.services.sweeps import sweep_create
from tests.llm_models import build_tiny_model
base = build_tiny_model(Path(os.environ["DATA_DIR"]) / "tiny", arch="llama", max_positions=8192)
policy_create(name="tiny", policy="llm", backend="transformers", model=str(base),
              params={"max_prompt_chars": 3000, "max_tokens": 24})
sweep = sweep_create(scenarios=[Scenario.objects.get(name="bilateral")],
                     policies=[PolicyConfig.objects.get(name="expert")], seeds=2, enqueue=False)
for chunk in sweep_start(sweep_id=sweep.pk):
    sweep_cells_run(sweep_id=sweep.pk, cell_ids=chunk.cell_ids)
"""
)


@pytest.fixture(scope="module")
def site() -> Iterator[EmbeddedSite]:
    site = EmbeddedSite(setup=TRAINING_SETUP)
    yield site
    site.stop()


def _chart_points(page, chart: str) -> int:
    script = f"(() => {{ const c = document.getElementById('{chart}'); "
    script += "return c && c.data && c.data[0] ? c.data[0].x.length : 0; })()"
    return page.evaluate(script)


def test_ops_train_from_the_page_and_get_a_policy(page, site) -> None:
    frames: list[dict] = []
    page.on(
        "websocket",
        lambda ws: ws.on("framereceived", lambda payload: frames.append(json.loads(payload))),
    )
    login(page, site, "ops")
    page.click("header >> text=Training")
    page.wait_for_url(f"{site.url}/training/")
    page.check("input[name=kind][value=sft]")
    page.fill("input[name=name]", "tiny-from-page")
    page.select_option("select[name=base]", "tiny")
    page.check("input[name=scenarios][value=bilateral]")
    page.fill("input[name=episodes]", "2")
    page.fill("input[name=max_steps]", "4")
    screenshot(page, "training-form-1366")
    page.click("#start-training button[type=submit]")
    page.wait_for_url(re.compile(r"/training/\d+/$"))

    deadline = time.monotonic() + 600
    while page.locator("#status").text_content() not in ("finished", "failed", "cancelled"):
        assert time.monotonic() < deadline, site.log_tail()
        time.sleep(0.2)
    assert page.locator("#status").text_content() == "finished", (
        page.locator("#error").text_content(),
        site.log_tail(),
    )
    # the stream carried the run to its end (not a reload), with its metric points
    progress = [f for f in frames if f.get("type") == "training.progress"]
    assert progress and progress[-1]["run"]["status"] == "finished"
    assert sum(len(f["metrics"]) for f in frames if "metrics" in f) >= 4
    assert _chart_points(page, "loss-chart") == 4
    assert _chart_points(page, "lr-chart") == 4
    assert "step 4/4" in page.locator("#log-tail").text_content()
    assert page.locator("#cancel-form").is_hidden()
    assert page.locator("#lineage-details").is_visible()  # filled by the last event
    page.click("#lineage-details summary")
    lineage = json.loads(page.locator("#lineage").text_content())
    assert lineage["steps"] == 4 and lineage["base"] == "tiny" and lineage["kind"] == "sft"
    assert page.locator("#lineage-steps").text_content() == "4 of 4"  # not the load-time 0
    link = page.locator("#policy-link")
    assert link.is_visible() and "tiny-from-page" in link.text_content()
    page.wait_for_selector("#loss-chart .main-svg")
    screenshot(page, "training-run-1366")

    page.set_viewport_size({"width": 390, "height": 844})
    page.reload()
    page.wait_for_selector("#loss-chart .main-svg")
    assert not has_horizontal_scroll(page)
    screenshot(page, "training-run-390")
    page.goto(f"{site.url}/training/")
    assert not has_horizontal_scroll(page)
    screenshot(page, "training-list-390")
    page.set_viewport_size({"width": 1366, "height": 900})
    page.goto(f"{site.url}/training/")
    page.click("text=tiny-from-page")
    page.click("#policy-link")
    page.wait_for_url(re.compile(r"/episodes/new/\?policy=tiny-from-page$"))
    assert page.locator("select[name=policy]").input_value() == "tiny-from-page"


def test_the_bench_report_reads_at_1366_and_390(page, site) -> None:
    report = plant_bench_report(site.data_dir / REPORT_DIR, seeds=3)
    login(page, site, "analyst")
    page.goto(f"{site.url}/training/")
    card = page.locator("#training-bench")
    rows = card.locator("#training-bench-table tbody tr")
    assert rows.count() == len(report.table) == 3
    assert card.locator("#training-bench-differences tbody tr").count() == 2
    for width in (1366, 390):
        page.set_viewport_size({"width": width, "height": 900})
        page.reload()
        card.locator(".bench-curves").scroll_into_view_if_needed()
        page.wait_for_function(
            "(() => { const i = document.querySelector('.bench-curves');"
            " return i.complete && i.naturalWidth > 0; })()"
        )
        box = card.locator(".bench-curves").bounding_box()
        assert box is not None and box["width"] <= width  # scaled to the card, not cut
        assert not has_horizontal_scroll(page)
        screenshot(page, f"training-bench-{width}")
