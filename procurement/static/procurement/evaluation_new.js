// The Evaluations page's start form: the evaluation's size (episodes, and how many call a
// language model) and a time and money estimate, from the figures the server declares
// (selectors.evaluations.ESTIMATE), updated as the form changes. An estimate only.
"use strict";
(function () {
  const form = document.getElementById("start-evaluation");
  if (!form) return;
  const facts = JSON.parse(document.getElementById("evaluation-form-facts").textContent);
  const f = facts.figures;
  const $ = (id) => document.getElementById(id);
  const checked = (name) => [...form.querySelectorAll(`input[name="${name}"]:checked`)].map((i) => i.value);
  const number = (name, fallback) => {
    const v = Number(form.querySelector(`[name="${name}"]`).value);
    return Number.isFinite(v) && v >= 1 ? Math.floor(v) : fallback;
  };
  const lineupModel = (lineup) => {
    if (!lineup.startsWith("llm:")) return null;
    const rest = lineup.slice(4);
    const parts = rest.split(":");
    const model = ["transformers", "vllm", "openai_compatible", "llamacpp"].includes(parts[0]) ? parts.slice(1).join(":") : rest;
    if (model.includes("://")) return model.split("://")[1].split("/")[0];
    return model.replace(/\/+$/, "").split("/").pop() || model;
  };
  function prices() {
    const out = {};
    form.querySelector('[name="prices"]').value.split(",").forEach((item) => {
      const [model, value] = item.split("=");
      if (!model || !value) return;
      const nums = value.split(":").map(Number);
      if (nums.every(Number.isFinite)) out[model.trim()] = [nums[0], nums[nums.length - 1]];
    });
    return out;
  }
  function duration(s) {
    if (s < 1) return `${Math.max(1, Math.round(s * 1000))} ms`;
    if (s < 90) return `${s.toFixed(0)} s`;
    if (s < 5400) return `${(s / 60).toFixed(0)} min`;
    return `${(s / 3600).toFixed(1)} h`;
  }
  function update() {
    const buyers = checked("policies");
    const scenarios = checked("scenarios");
    const more = form.querySelector('[name="more_suppliers"]').value.split(",").map((s) => s.trim()).filter(Boolean);
    const lineups = [...new Set([...checked("suppliers"), ...more])];
    if (!lineups.length) lineups.push("scenario");
    const perCell = number("seeds", 1) * number("replays", 1);
    const price = prices();
    let episodes = 0, llmEpisodes = 0, seconds = 0, money = 0;
    scenarios.forEach((sc) => {
      const scen = facts.scenarios[sc] || { mode: "arena" };
      const decisions = f.decisions_per_episode[scen.mode] || f.decisions_per_episode.arena;
      lineups.forEach((lineup) => {
        const supplierModel = lineup === "scenario" ? (scen.llm ? scen.model : null) : lineupModel(lineup);
        buyers.forEach((b) => {
          const buyer = facts.policies[b] || {};
          episodes += perCell;
          const models = [buyer.llm ? buyer.model : null, supplierModel].filter(Boolean);
          if (!models.length) {
            const slow = (f.slow_rule_decision_s[b] || {})[scen.mode];
            seconds += perCell * decisions * (slow || f.rule_decision_s);
            return;
          }
          llmEpisodes += perCell;
          seconds += perCell * decisions * f.llm_decision_s;
          models.forEach((m) => {
            const [pin, pout] = price[m] || [0, 0];
            money += perCell * decisions * (f.prompt_tokens_per_decision * pin + f.completion_tokens_per_decision * pout) / 1e6;
          });
        });
      });
    });
    $("estimate-size").textContent = buyers.length && scenarios.length
      ? `${episodes.toLocaleString()} episodes, ${llmEpisodes.toLocaleString()} of them call a language model`
      : "pick buyers and scenarios";
    $("estimate-time").textContent = episodes
      ? `about ${duration(seconds)} of play${llmEpisodes ? `, about ${money.toFixed(money < 1 ? 4 : 2)} in model tokens at the prices given` : ""}`
      : "–";
    $("estimate-note").textContent = `An estimate, not a promise: ${(f.rule_decision_s * 1000).toFixed(1)} ms per rule decision (the expert's in bilateral: ${f.slow_rule_decision_s.expert.bilateral * 1000} ms); ${f.llm_decision_s} s per model decision (SmolLM2 on a loaded CPU, one at a time: a GPU and batching are much faster), about ${f.decisions_per_episode.bilateral} decisions per bilateral episode and ${f.decisions_per_episode.arena} per arena episode, ${f.prompt_tokens_per_decision} prompt and ${f.completion_tokens_per_decision} completion tokens per model decision.`;
  }
  form.addEventListener("input", update);
  form.addEventListener("change", update);
  update();
})();
