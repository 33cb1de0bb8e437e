// The sweep page: a live progress bar (/ws/sweeps/ID/); the leaderboard and the score
// distribution refresh from the API while cells finish, and once at the end.
"use strict";
(function () {
  const sweep = JSON.parse(document.getElementById("sweep-page").textContent).sweep;
  const f = window.arenaFormat;
  const $ = (id) => document.getElementById(id);
  const terminal = ["finished", "failed", "cancelled"];
  let refreshing = false, lastRefresh = 0, pending = null;

  function showProgress(s) {
    Object.assign(sweep, s);
    const pct = s.total_cells ? (100 * (s.done_cells + s.failed_cells)) / s.total_cells : 0;
    $("progress-bar").style.width = `${pct}%`;
    $("progress-bar").parentElement.setAttribute("aria-valuenow", Math.round(pct));
    $("progress-text").textContent = `${s.done_cells.toLocaleString()} of ${s.total_cells.toLocaleString()} cells done` +
      (s.failed_cells ? `, ${s.failed_cells.toLocaleString()} failed or cancelled` : "") + ` (${pct.toFixed(0)} %)`;
    $("status").textContent = s.status;
    $("status").className = `badge ${s.status}`;
    if (terminal.includes(s.status) && $("cancel")) $("cancel").hidden = true;
    scheduleRefresh(terminal.includes(s.status));
  }

  function scheduleRefresh(now) {
    // At most one refresh every 2 s while running; always one at the end.
    clearTimeout(pending);
    const wait = now ? 0 : Math.max(0, 2000 - (Date.now() - lastRefresh));
    pending = setTimeout(refresh, wait);
  }

  async function refresh() {
    if (refreshing) { scheduleRefresh(false); return; }
    refreshing = true; lastRefresh = Date.now();
    try {
      const [detail, scores] = await Promise.all([
        fetch(`/api/sweeps/${sweep.id}/`, { credentials: "same-origin" }).then((r) => r.json()),
        fetch(`/api/sweeps/${sweep.id}/scores/`, { credentials: "same-origin" }).then((r) => r.json()),
      ]);
      showLeaderboard((detail.summary && detail.summary.leaderboard) || []);
      showDistribution(scores);
    } finally { refreshing = false; }
  }

  // The episode list filtered to this sweep's cells of one scenario and policy.
  function episodesUrl(scenario, policy) {
    return `/episodes/?${new URLSearchParams({ sweep: sweep.id, scenario, policy })}`;
  }

  function showLeaderboard(rows) {
    if (!rows.length) return;
    const tbody = $("leaderboard").tBodies[0];
    tbody.replaceChildren(...rows.map((r) => {
      const tr = document.createElement("tr");
      tr.className = "link-row";
      tr.title = `Open the episodes of ${r.scenario} × ${r.policy}`;
      tr.addEventListener("click", (event) => {
        if (!event.target.closest("a")) window.location.href = episodesUrl(r.scenario, r.policy);
      });
      const ci = r.score.ci_low == null ? "–" : `${f.score(r.score.ci_low)} – ${f.score(r.score.ci_high)}`;
      [[r.scenario], [r.policy], [r.episodes, "num"], [f.score(r.score.mean), "num"], [ci, "num"],
        [f.score(r.deal_rate), "num"], [f.score(r.buyer_share), "num"], [f.score(r.mutual_loss), "num"],
        [r.rounds_per_deal == null ? "–" : Number(r.rounds_per_deal).toFixed(2), "num"]].forEach(([text, cls]) => {
        const td = document.createElement("td");
        td.textContent = text;
        if (cls) td.className = cls;
        tr.appendChild(td);
      });
      const link = document.createElement("a");  // the row's own link (keyboard, new tab)
      link.href = episodesUrl(r.scenario, r.policy);
      link.textContent = r.scenario;
      tr.cells[0].replaceChildren(link);
      return tr;
    }));
  }

  function showDistribution(groups) {
    if (!window.Plotly || !groups.length) return;
    const policies = [...new Set(groups.map((g) => g.policy))];
    const traces = policies.map((policy) => {
      const mine = groups.filter((g) => g.policy === policy);
      return {
        type: "box", name: policy, boxmean: true,
        x: mine.flatMap((g) => g.scores.map(() => g.scenario)),
        y: mine.flatMap((g) => g.scores),
        customdata: mine.flatMap((g) => g.episodes || []),  // each point's episode id
        boxpoints: "all", jitter: 0.4, pointpos: 0, marker: { size: 5 },
        hoveron: "points",  // a click lands on a point (an episode), never on the box
        hovertemplate: "episode %{customdata}<br>score %{y:.3f}<extra>%{x}</extra>",
      };
    });
    Plotly.react("distribution", traces, {
      boxmode: "group", margin: { t: 10, r: 10, b: 40, l: 45 },
      yaxis: { title: { text: "score" } }, legend: { orientation: "h", y: 1.15 },
    }, { displayModeBar: false, responsive: true });
    const plot = $("distribution");
    if (!plot.dataset.clicks) {  // once: Plotly.react keeps the listeners
      plot.dataset.clicks = "1";
      plot.on("plotly_click", (data) => {
        const point = (data.points || []).find((p) => p.customdata != null);
        if (point) window.location.href = `/episodes/${point.customdata}/`;
      });
    }
  }

  const cancel = $("cancel");
  if (cancel) cancel.addEventListener("click", async () => {
    if (!window.confirm("Cancel this sweep? Cells not yet run are dropped; finished ones stay.")) return;
    const [ok, body] = await window.arenaPost(`/api/sweeps/${sweep.id}/cancel/`);
    if (ok) showProgress(body); else alert(body.detail || "Could not cancel.");
  });

  showProgress(sweep);
  window.arenaSocket(`/ws/sweeps/${sweep.id}/`, {
    status: $("live-status"),
    onMessage(message) {
      if (message.type === "sweep.snapshot" || message.type === "sweep.progress") showProgress(message.sweep);
    },
  });
})();
