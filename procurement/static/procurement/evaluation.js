// The evaluation page: mean score with its bootstrap 95 % CI per policy and scenario, the
// ratings (mu with +-sigma), and per scenario the buyers x suppliers matrix as a heatmap,
// drawn from the stored evaluation.
"use strict";
(function () {
  const page = JSON.parse(document.getElementById("evaluation-page").textContent);
  if (!window.Plotly) return;
  const config = { displayModeBar: false, responsive: true };
  const label = (r) => (r.tier ? `${r.scenario}@${r.tier}` : r.scenario);

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
    yaxis: { title: { text: "mean score" }, range: [0, 1] }, legend: { orientation: "h", y: 1.15 },
  }, config);

  const ratings = page.ratings || [];
  const kinds = [...new Set(ratings.map((r) => r.kind))];
  const ratingTraces = kinds.map((kind) => {
    const mine = ratings.filter((r) => r.kind === kind);
    return {
      type: "scatter", mode: "markers", name: kind,
      x: mine.map((r) => r.player),
      y: mine.map((r) => r.mu),
      error_y: { type: "data", array: mine.map((r) => r.sigma) },
      customdata: mine.map((r) => r.ordinal),
      hovertemplate: "%{x}<br>μ %{y:.2f} ± %{error_y.array:.2f}<br>ordinal %{customdata:.2f}<extra></extra>",
    };
  });
  Plotly.newPlot("rating-chart", ratingTraces, {
    margin: { t: 10, r: 10, b: 110, l: 45 },
    yaxis: { title: { text: "rating μ ± σ" } }, legend: { orientation: "h", y: 1.15 },
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
      hovertemplate: "%{y} vs %{x}<br>mean score %{z:.3f}<br>%{customdata} episodes<extra></extra>",
      colorbar: { title: { text: "score" } },
    }], {
      margin: { t: 10, r: 10, b: 60, l: 110 },
      height: 120 + 40 * board.buyers.length,
      xaxis: { title: { text: "supplier line-up" } }, yaxis: { autorange: "reversed" },
    }, config);
  });
})();
