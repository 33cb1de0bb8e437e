// A training run's page: progress, loss / reward / learning-rate curves and the log tail,
// live over /ws/training/ID/ (a snapshot on connect, then the points logged since).
"use strict";
(function () {
  const data = JSON.parse(document.getElementById("training-page").textContent);
  const run = data.run;
  const $ = (id) => document.getElementById(id);
  const terminal = ["finished", "failed", "cancelled"];
  const points = new Map(); // step -> metrics (a point may arrive twice)
  const charts = [["loss-chart", "loss"], ["reward-chart", "reward"], ["lr-chart", "learning_rate"]];

  function addPoints(list) { (list || []).forEach((p) => points.set(p.step, p)); drawCharts(); }

  function emptyText(key) {
    return key === "reward" && run.kind === "sft" ? "no reward in SFT" : "no points yet";
  }

  function drawCharts() {
    if (!window.Plotly) return;
    const rows = [...points.values()].sort((a, b) => a.step - b.step);
    charts.forEach(([id, key]) => {
      const mine = rows.filter((p) => typeof p[key] === "number");
      const layout = {
        margin: { t: 10, r: 10, b: 40, l: 55 }, xaxis: { title: { text: "step" } },
        annotations: mine.length ? [] : [{ text: emptyText(key), showarrow: false, xref: "paper", yref: "paper", x: 0.5, y: 0.5 }],
      };
      Plotly.react(id, [{ x: mine.map((p) => p.step), y: mine.map((p) => p[key]), mode: "lines+markers", name: key }],
        layout, { displayModeBar: false, responsive: true });
    });
  }

  function showRun(r) {
    Object.assign(run, r);
    const pct = r.max_steps ? Math.min(100, (100 * r.step) / r.max_steps) : 0;
    $("progress-bar").style.width = `${pct}%`;
    $("progress-bar").parentElement.setAttribute("aria-valuenow", Math.round(pct));
    $("progress-text").textContent = `step ${r.step} of ${r.max_steps} (${pct.toFixed(0)} %)`;
    $("lineage-steps").textContent = `${r.step} of ${r.max_steps}`;  // the server drew it at load
    $("status").textContent = r.status;
    $("status").className = `badge ${r.status}`;
    $("log-tail").textContent = r.log_tail;
    $("error").textContent = r.error; $("error").hidden = !r.error;
    if (terminal.includes(r.status) && $("cancel-form")) $("cancel-form").hidden = true;
    if (r.lineage) {
      $("lineage").textContent = JSON.stringify(r.lineage, null, 2);
      $("lineage-details").hidden = false;
    }
    if (r.policy) {
      const link = $("policy-link");
      link.href = `/episodes/new/?policy=${encodeURIComponent(r.policy)}`;
      link.textContent = `Play policy ${r.policy}`;
      link.hidden = false;
    }
  }

  showRun(run);
  addPoints(data.metrics);
  window.arenaSocket(`/ws/training/${run.id}/`, {
    status: $("live-status"),
    onMessage(message) {
      if (message.type === "training.snapshot" || message.type === "training.progress") {
        showRun(message.run);
        addPoints(message.metrics);
      }
    },
  });
})();
