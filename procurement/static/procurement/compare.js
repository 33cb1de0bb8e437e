// The compare page's chart: both runs' running score by step on one axis (0-1).
"use strict";
(function () {
  const lines = JSON.parse(document.getElementById("compare-lines").textContent);
  if (!window.Plotly) return;
  const trace = (line, dash) => ({
    type: "scatter", mode: "lines+markers", name: line.name, x: line.steps, y: line.scores,
    line: { shape: "hv", dash }, marker: { size: 4 },
    hovertemplate: "step %{x}<br>score %{y:.3f}<extra>%{fullData.name}</extra>",
  });
  Plotly.newPlot("compare-chart", [trace(lines.a, "solid"), trace(lines.b, "dot")], {
    margin: { t: 10, r: 10, b: 40, l: 45 }, legend: { orientation: "h", y: 1.15 },
    xaxis: { title: { text: "step" }, rangemode: "tozero" },
    yaxis: { title: { text: "running score" }, range: [0, 1] },
  }, { displayModeBar: false, responsive: true });
})();
