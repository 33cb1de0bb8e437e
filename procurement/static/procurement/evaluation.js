// The evaluation page. While the run is queued or running: its progress, live over
// /ws/evaluations/ID/ (a snapshot on connect, then an event about once a second); when it
// finishes the page reloads to draw the result. Once finished: mean score with its
// bootstrap 95 % CI per buyer and scenario, each board's leaderboard (CI bars, coloured by
// tie group: the best, tied with the best, not tied), the ratings (mu with +-sigma), and
// per scenario the buyers x suppliers matrix as a heatmap whose cells open their episodes.
"use strict";
(function () {
  const page = JSON.parse(document.getElementById("evaluation-page").textContent);
  const run = page.evaluation;
  const $ = (id) => document.getElementById(id);
  const terminal = ["finished", "failed", "cancelled"];

  function showRun(r) {
    const pct = r.episodes ? Math.min(100, (100 * r.done_episodes) / r.episodes) : 0;
    if ($("progress-bar")) {
      $("progress-bar").style.width = `${pct}%`;
      $("progress-bar").parentElement.setAttribute("aria-valuenow", Math.round(pct));
      $("progress-text").textContent = `${r.done_episodes.toLocaleString()} of ${r.episodes.toLocaleString()} episodes (${pct.toFixed(0)} %)`;
      $("current-cell").textContent = r.current_cell ? `Now: ${r.current_cell}` : "";
      // each lane (rule episodes on cpu, model episodes on gpu): progress, play time, state
      $("lanes").replaceChildren(...(r.lanes || []).map((l) => {
        const item = document.createElement("li");
        item.dataset.lane = l.lane;
        item.textContent = l.summary;
        return item;
      }));
      $("error").textContent = r.error; $("error").hidden = !r.error;
    }
    $("status").textContent = r.status;
    $("status").className = `badge ${r.status}`;
    if (terminal.includes(r.status) && $("cancel-form")) $("cancel-form").hidden = true;
    if (r.status === "finished" && run.status !== "finished") window.location.reload();
  }

  if (!terminal.includes(run.status)) {
    showRun(run);
    window.arenaSocket(`/ws/evaluations/${run.id}/`, {
      status: $("live-status"),
      onMessage(message) {
        if (message.type === "evaluation.snapshot" || message.type === "evaluation.progress") {
          showRun(message.evaluation);
        }
      },
    });
  }
  if (run.status !== "finished" || !window.Plotly) return;

  const config = { displayModeBar: false, responsive: true };
  const label = (r) => (r.tier ? `${r.scenario}@${r.tier}` : r.scenario);
  const narrow = window.matchMedia("(max-width: 600px)").matches;
  // Legends sit above the plot, growing upwards as they wrap (five buyers take five rows
  // at 390 px): plotly widens the top margin for them, so they never cover the data.
  const above = { orientation: "h", x: 0, y: 1, yanchor: "bottom" };

  const rows = page.leaderboard || [];
  const policies = [...new Set(rows.map((r) => r.policy))];
  const scoreTraces = policies.map((policy) => {
    const mine = rows.filter((r) => r.policy === policy && r.score.mean != null);
    return {
      type: "bar", name: policy,
      x: mine.map(label),
      y: mine.map((r) => r.score.mean),
      error_y: {
        type: "data", symmetric: false,
        array: mine.map((r) => r.score.ci_high - r.score.mean),
        arrayminus: mine.map((r) => r.score.mean - r.score.ci_low),
      },
      hovertemplate: "%{x}<br>" + policy + ": %{y:.3f}<extra></extra>",
    };
  });
  Plotly.newPlot("score-chart", scoreTraces, {
    barmode: "group", margin: { t: 10, r: 10, b: 90, l: 45 },
    yaxis: { title: { text: "mean score" }, range: [0, 1] }, legend: above,
  }, config);

  // Each board's leaderboard: one dot per buyer with its CI, coloured by tie group.
  const groups = [
    ["best", "#1a7f37", (r) => r.best],
    ["tied with the best", "#2b5cab", (r) => !r.best && r.tied],
    ["worse than the best", "#8a94a3", (r) => !r.tied],
  ];
  document.querySelectorAll(".leaderboard-chart").forEach((el) => {
    const board = rows
      .filter((r) => r.scenario === el.dataset.scenario && (r.tier || "") === el.dataset.tier && r.score.mean != null)
      .sort((a, b) => b.score.mean - a.score.mean);
    const traces = groups.map(([name, color, test]) => {
      const mine = board.filter(test);
      return {
        type: "scatter", mode: "markers", name, marker: { color, size: 10 },
        x: mine.map((r) => r.score.mean), y: mine.map((r) => r.policy),
        error_x: {
          type: "data", symmetric: false, color,
          array: mine.map((r) => r.score.ci_high - r.score.mean),
          arrayminus: mine.map((r) => r.score.mean - r.score.ci_low),
        },
        customdata: mine.map((r) => [r.score.ci_low, r.score.ci_high, r.episodes]),
        hovertemplate: "%{y}: %{x:.3f} [%{customdata[0]:.3f}, %{customdata[1]:.3f}], n=%{customdata[2]}<extra>" + name + "</extra>",
      };
    }).filter((t) => t.x.length);
    Plotly.newPlot(el, traces, {
      margin: { t: 30, r: 10, b: 45, l: narrow ? 90 : 150 }, height: 110 + 32 * board.length,
      xaxis: { title: { text: "mean score, 95 % CI" }, range: [0, 1] },
      yaxis: { categoryorder: "array", categoryarray: board.map((r) => r.policy).reverse(), automargin: true },
      legend: above,
    }, config);
  });

  const ratings = page.ratings || [];
  const kinds = [...new Set(ratings.map((r) => r.kind))];
  const ratingTraces = kinds.map((kind) => {
    const mine = ratings.filter((r) => r.kind === kind);
    return {
      type: "scatter", mode: "markers", name: kind,
      x: mine.map((r) => r.player),
      y: mine.map((r) => r.mu),
      error_y: { type: "data", array: mine.map((r) => r.sigma) },
      customdata: mine.map((r) => [r.ordinal, r.matches]),
      hovertemplate: "%{x}<br>μ %{y:.2f} ± %{error_y.array:.2f}<br>ordinal %{customdata[0]:.2f}, %{customdata[1]} matches<extra></extra>",
    };
  });
  Plotly.newPlot("rating-chart", ratingTraces, {
    margin: { t: 10, r: 10, b: 110, l: 45 },
    yaxis: { title: { text: "rating μ ± σ" } }, legend: above,
  }, config);

  const boards = page.matrix || [];
  document.querySelectorAll(".matrix-chart").forEach((el) => {
    const board = boards[Number(el.dataset.matrix)];
    if (!board) return;
    const text = board.score.map((row) => row.map((v) => (v == null ? "–" : v.toFixed(3))));
    Plotly.newPlot(el, [{
      type: "heatmap", z: board.score, x: board.suppliers, y: board.buyers,
      zmin: 0, zmax: 1, colorscale: "Viridis", text, texttemplate: "%{text}",
      customdata: board.n,
      hovertemplate: "%{y} vs %{x}<br>mean score %{z:.3f}<br>%{customdata} episodes (click: the list)<extra></extra>",
      colorbar: { title: { text: "score" } },
    }], {
      margin: { t: 10, r: 10, b: 60, l: narrow ? 90 : 110 },
      height: 120 + 40 * board.buyers.length,
      xaxis: { title: { text: "supplier line-up" } }, yaxis: { autorange: "reversed", automargin: true },
    }, config);
    el.on("plotly_click", (event) => {
      const point = event.points && event.points[0];
      if (!point) return;
      const params = new URLSearchParams({ scenario: board.scenario, lineup: point.x, buyer: point.y });
      if (board.tier) params.set("tier", board.tier);
      window.location.href = `/evaluations/${run.id}/cell/?${params}`;
    });
  });
})();
