// The sweep form's estimate: how many cells, and how many of them need a language model.
"use strict";
(function () {
  const llm = JSON.parse(document.getElementById("llm-names").textContent);
  const form = document.getElementById("start-sweep");
  const out = document.getElementById("estimate");
  const checked = (name) => [...form.querySelectorAll(`input[name=${name}]:checked`)].map((el) => el.value);
  function update() {
    const scenarios = checked("scenarios"), policies = checked("policies");
    const seeds = Math.max(0, parseInt(form.elements.seeds.value, 10) || 0);
    const cells = scenarios.length * policies.length * seeds;
    if (!cells) { out.textContent = "Pick scenarios and policies."; return; }
    let llmCells = 0;
    for (const s of scenarios) for (const p of policies)
      if (llm.scenarios.includes(s) || llm.policies.includes(p)) llmCells += seeds;
    let text = `${cells.toLocaleString()} cells (${scenarios.length} scenarios × ${policies.length} policies × ${seeds} seeds).`;
    text += llmCells
      ? ` ${llmCells.toLocaleString()} of them use a language model: they run on the gpu queue and take seconds to minutes each.`
      : " Rule policies only: about a second per thousand cells on each worker.";
    if (cells > 20000) text += " That is more than the limit of 20,000 cells.";
    out.textContent = text;
  }
  form.addEventListener("input", update);
  update();
})();
