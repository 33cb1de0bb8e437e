// The episode page: decisions arrive over the socket (snapshot, then live batches; on
// reconnect it resumes after its last step), the boards show the public state after the
// scrubber's step, the chart the running score and each step's reward.
"use strict";
(function () {
  const page = JSON.parse(document.getElementById("episode-page").textContent);
  const episode = page.episode;
  const f = window.arenaFormat;
  const meaning = window.arenaMeaning(page.units, page.glossary); // units, currency, glossary
  const $ = (id) => document.getElementById(id);
  const decisions = new Map(); // step -> decision
  let lastStep = -1, follow = true, selected = -1, chartQueued = false, stateTimer = null;

  function cell(tr, text, cls) {
    const td = document.createElement("td");
    td.textContent = text == null ? "" : text;
    if (cls) td.className = cls;
    tr.appendChild(td);
    return td;
  }

  function describe(d) {
    const a = typeof d.action === "object" && d.action ? d.action : { action_type: String(d.action) };
    const who = [a.supplier_id, a.requirement_id].filter(Boolean).join(" · ");
    let response = "", message = d.message || "";
    if (!d.valid && d.error) response = `${d.error.code}: ${d.error.message}`;
    else if (d.response) {
      response = `${d.response.response}${d.response.price != null ? " at " + meaning.price(d.response.price, a.requirement_id) : ""}`;
      message = d.response.message || message;
    } else if (d.events && d.events.length) response = d.events[0].text;
    if (a.approval) response = `${a.approval.decision.replace("_", " ")} by ${a.approval.by}` + (response ? `; ${response}` : "");
    return { type: a.action_type || "?", who, response, message };
  }

  // Who played the row, when not the plain policy: the model (buyer or supplier), a
  // fallback with its reason, the guard's repairs of the supplier's reply.
  const REASON_CHARS = 160;
  function marks(d) {
    const out = [], model = page.model || "model";
    const actor = d.actor || "policy", supplier = d.supplier_actor || "";
    const buyerFellBack = actor.startsWith("fallback:");
    if (actor === "llm") out.push(["llm", `LLM ${model}`]);
    else if (buyerFellBack) out.push(["fallback", `fallback: ${actor.slice(9)}`, d.llm_error || "the model's reply was unusable"]);
    else if (actor !== "policy") out.push(["", actor]);
    if (supplier === "llm") out.push(["llm", `supplier LLM ${model}`]);
    else if (supplier.startsWith("fallback:")) {
      const why = buyerFellBack ? "the model's reply was unusable" : d.llm_parse_failure ? "its reply could not be parsed" : "the model call failed";
      out.push(["fallback", `supplier fallback: ${supplier.slice(9)}`, why]);
    }
    const repairs = Array.isArray(d.guard_repairs) ? d.guard_repairs : [];
    for (const r of repairs) out.push(["repair", "guard repair", String(r)]);
    if (!repairs.length && d.guard_interventions > 0) out.push(["repair", `guard repairs: ${d.guard_interventions}`]);
    return out;
  }

  function markCell(td, list) {
    if (!list.length) return;
    const box = document.createElement("div");
    box.className = "marks";
    for (const [cls, text, reason] of list) {
      const m = document.createElement("span");
      m.className = `mark ${cls}`.trim(); m.textContent = text;
      box.appendChild(m);
      if (reason) {
        const r = document.createElement("span");
        r.className = "reason"; r.title = reason;
        r.textContent = reason.length > REASON_CHARS ? reason.slice(0, REASON_CHARS - 1) + "…" : reason;
        box.appendChild(r);
      }
    }
    td.appendChild(box);
  }

  function addRow(d) {
    const tbody = $("timeline").tBodies[0];
    const info = describe(d);
    const tr = document.createElement("tr");
    tr.dataset.step = d.step;
    if (!d.valid) tr.className = "invalid";
    cell(tr, d.step, "num"); cell(tr, d.week, "num"); markCell(cell(tr, info.type), marks(d));
    cell(tr, info.who); meaning.figureCell(cell(tr, "", "figures"), d.action); cell(tr, info.response);
    const msg = cell(tr, "", "message-cell");
    if (info.message) { const m = document.createElement("div"); m.className = "message"; m.textContent = info.message; msg.appendChild(m); }
    if (d.rationale) { const r = document.createElement("div"); r.className = "muted"; r.textContent = "Why: " + d.rationale; msg.appendChild(r); }
    const tells = d.response && d.response.tells;
    if (tells) {
      const top = Object.entries(tells).sort((x, y) => y[1] - x[1]).slice(0, 3);
      const t = document.createElement("div"); t.className = "tells";
      t.textContent = "tells: " + top.map(([k, v]) => `${k} ${v.toFixed(2)}`).join(", ");
      msg.appendChild(t);
    }
    cell(tr, f.score(d.reward), "num reward");
    meaning.labelCells(tr, $("timeline"));
    // Keep step order even when a resume fills a gap.
    const after = [...tbody.rows].find((row) => Number(row.dataset.step) > d.step);
    tbody.insertBefore(tr, after || null);
  }

  function addDecisions(list) {
    let added = false;
    for (const d of list) {
      if (decisions.has(d.step)) continue; // a batch can arrive twice around a (re)connect
      decisions.set(d.step, d);
      addRow(d);
      added = true;
      if (d.step > lastStep) lastStep = d.step;
    }
    if (!added) return;
    const latest = decisions.get(lastStep);
    $("step-count").textContent = decisions.size;
    $("running-score").textContent = f.score(latest.running_score);
    $("week").textContent = latest.state && latest.state.week != null ? latest.state.week : latest.week;
    $("invalid-count").textContent = [...decisions.values()].filter((d) => !d.valid).length;
    if (latest.state) showBudget(latest.state.budget_committed, latest.state.budget_remaining);
    $("scrubber").max = lastStep;
    if (follow) select(lastStep);
    queueChart();
  }

  function showBudget(committed, remaining) {
    const total = committed + remaining;
    $("budget-total").textContent = meaning.money(total);
    $("budget-committed").textContent = meaning.money(committed);
    $("budget-remaining").textContent = meaning.money(remaining);
    $("budget-bar").style.width = total > 0 ? `${Math.min(100, (100 * committed) / total)}%` : "0";
  }

  function queueChart() {
    if (chartQueued || !window.Plotly) return;
    chartQueued = true;
    requestAnimationFrame(() => {
      chartQueued = false;
      const steps = [...decisions.keys()].sort((a, b) => a - b);
      const score = steps.map((s) => decisions.get(s).running_score);
      const reward = steps.map((s) => decisions.get(s).reward);
      const marker = selected >= 0 ? [{ type: "line", x0: selected, x1: selected, yref: "paper", y0: 0, y1: 1, line: { color: "#b38600", width: 1 } }] : [];
      Plotly.react("chart", [
        { x: steps, y: score, name: "running score", mode: "lines", line: { color: "#2b5cab" } },
        { x: steps, y: reward, name: "reward", type: "bar", marker: { color: "#4fc3f7" }, yaxis: "y2" },
      ], {
        margin: { t: 10, r: 40, b: 35, l: 45 }, showlegend: true, legend: { orientation: "h", y: 1.15 },
        xaxis: { title: { text: "step" } }, yaxis: { title: { text: "score" } },
        yaxis2: { overlaying: "y", side: "right", showgrid: false, title: { text: "reward" } },
        shapes: marker,
      }, { displayModeBar: false, responsive: true });
    });
  }

  function select(step) {
    selected = step;
    $("scrubber").value = step;
    const d = decisions.get(step);
    $("scrubber-label").textContent = step < 0 ? "before the first decision" : `after step ${step} (week ${d ? d.week : "?"})`;
    for (const row of document.querySelectorAll("#timeline tr.current")) row.classList.remove("current");
    const row = document.querySelector(`#timeline tr[data-step="${step}"]`);
    if (row) { row.classList.add("current"); if (!follow) row.scrollIntoView({ block: "nearest" }); }
    queueChart();
    if (page.boards) { clearTimeout(stateTimer); stateTimer = setTimeout(() => loadState(step), follow ? 400 : 120); }
  }

  async function loadState(step) {
    const response = await fetch(`/api/episodes/${episode.id}/state/?step=${step}`, { credentials: "same-origin" });
    const body = await response.json();
    if (!response.ok) { note(body.detail || JSON.stringify(body)); return; }
    if (step !== selected) return; // the scrubber moved on
    renderBoards(body);
  }

  function note(text) { $("boards-note").hidden = false; $("boards-note").textContent = text; }

  function fill(table, rows) {
    const tbody = $(table).tBodies[0];
    tbody.replaceChildren(...rows.map((values) => {
      const tr = document.createElement("tr");
      values.forEach(([text, cls]) => cell(tr, text, cls));
      return tr;
    }));
  }

  function renderBoards(state) {
    document.dispatchEvent(new CustomEvent("arena:state", { detail: state }));
    showBudget(state.budget.committed, state.budget.remaining);
    fill("requirements", state.requirements.map((r) => [[r.id], [r.name], [r.quantity, "num"], [r.quantity_needed, "num"], [r.deadline_week, "num"], [r.critical ? "yes" : ""], [r.status]]));
    fill("suppliers", state.suppliers.map((s) => [[`${s.id} ${s.name}`], [s.categories.join(", ")], [s.lead_time_weeks, "num"], [s.rated_reliability, "num"], [s.active && !s.rejected_by_buyer ? "yes" : "no"]]));
    fill("threads", state.threads.map((t) => {
      const last = t.rounds.length ? t.rounds[t.rounds.length - 1] : null;
      return [[t.supplier_id], [t.requirement_id], [t.status], [t.rounds.length, "num"], [last ? f.money(last.buyer_offer) : "", "num"],
        [f.money(t.standing_counter), "num"], [f.money(meaning.agreedPrice(t, state.contracts)), "num"], [t.valid_until_week ?? t.counter_valid_until_week ?? "", "num"]];
    }));
  }

  function showWaiting(waiting) {
    // What a queued or running episode waits for: its place in its lane, its model.
    const terminal = ["finished", "failed", "cancelled"].includes(episode.status);
    $("waiting").hidden = terminal || !waiting;
    $("waiting").textContent = waiting && !terminal ? waiting.text : "";
  }

  function showEpisode(e) {
    Object.assign(episode, e);
    $("status").textContent = e.status;
    $("status").className = `badge ${e.status}`;
    showWaiting(e.waiting);
    const terminal = ["finished", "failed", "cancelled"].includes(e.status);
    for (const id of ["cancel", "seat", "approval"]) if ($(id) && terminal) $(id).hidden = true;
    if (e.status === "finished" || e.status === "failed") loadMetrics();
  }

  async function loadMetrics() {
    const response = await fetch(`/api/episodes/${episode.id}/`, { credentials: "same-origin" });
    if (!response.ok) return;
    const body = await response.json();
    if (body.error) { $("episode-error").hidden = false; $("episode-error").textContent = body.error; }
    showMetrics(body.metrics || {});
  }

  function showMetrics(metrics) {
    const keys = Object.keys(metrics);
    if (!keys.length) return;
    $("metrics-card").hidden = false;
    $("metrics").replaceChildren(...keys.map((k) => {
      const dl = document.createElement("dl");
      dl.className = "facts";
      const dt = document.createElement("dt"), dd = document.createElement("dd");
      const v = metrics[k];
      dt.appendChild(meaning.metricTerm(k));
      // null: a deal metric of an episode without a deal (shown_metrics), no value.
      dd.textContent = meaning.metricValue(k, v);
      dl.append(dt, dd);
      return dl;
    }));
  }

  async function loadEarlier(before) {
    // The snapshot holds the latest decisions; older ones come from the API, in pages.
    for (let page_ = 1; ; page_++) {
      const response = await fetch(`/api/episodes/${episode.id}/decisions/?page_size=2000&page=${page_}`, { credentials: "same-origin" });
      if (!response.ok) return;
      const body = await response.json();
      addDecisions(body.results.filter((d) => d.step < before));
      if (!body.next || body.results.length === 0 || body.results[body.results.length - 1].step >= before) return;
    }
  }

  $("scrubber").addEventListener("input", (event) => { follow = false; select(Number(event.target.value)); });
  $("follow").addEventListener("click", () => { follow = true; select(lastStep); });
  const cancel = $("cancel");
  if (cancel) cancel.addEventListener("click", async () => {
    if (!window.confirm("Cancel this episode? It stops where it is and cannot be resumed.")) return;
    const [ok, body] = await window.arenaPost(`/api/episodes/${episode.id}/cancel/`);
    if (ok) showEpisode(body); else alert(body.detail || "Could not cancel.");
  });

  // Escalations that asked for an answer (step -> payload): the one waiting, with the
  // buttons only for a viewer who may answer (else why not), and every answer given.
  const approvals = new Map();
  function mayNotAnswer(a) {
    const viewer = page.viewer || {};
    if (a.barred && a.barred[viewer.username]) return a.barred[viewer.username];
    const rank = (role) => (page.roles || []).indexOf(role);
    if (rank(viewer.role) < rank(a.approver_role)) return `This scenario's escalations are answered by ${a.approvers}.`;
    return "";
  }
  function showApproval(a) {
    approvals.set(a.step, a);
    const all = [...approvals.values()].sort((x, y) => x.step - y.step);
    const terminal = ["finished", "failed", "cancelled"].includes(episode.status);
    const waiting = terminal ? null : all.find((x) => x.status === "pending");
    const answered = all.filter((x) => x.status !== "pending");
    const target = (x) => [x.supplier_id, x.requirement_id].filter(Boolean).join(" on ");
    $("approvals-card").hidden = !waiting && !answered.length;
    $("approval").hidden = !waiting;
    if (waiting) {
      const until = new Date(waiting.deadline).toLocaleTimeString();
      const stake = waiting.stake != null ? `, ${meaning.money(waiting.stake)} at stake` : "";
      const refusal = waiting.standing_refusal;
      const then = refusal
        ? `${refusal.by} refused this requirement's escalation at ${new Date(refusal.at).toLocaleTimeString()}: only someone else may approve it now; without an answer by ${until}, the refusal stands.`
        : `Without an answer by ${until}, the scenario's rule decides.`;
      $("approval-text").textContent = `The buyer asks to escalate ${target(waiting)} (step ${waiting.step}${stake}). ${then}` +
        (waiting.rationale ? ` Why: ${waiting.rationale}` : "");
      const why = mayNotAnswer(waiting);
      $("approval-why").hidden = !why;
      $("approval-why").textContent = why;
      $("approval-actions").hidden = Boolean(why);
    }
    $("approval-history").hidden = !answered.length;
    $("approval-log").replaceChildren(...answered.map((x) => {
      const li = document.createElement("li");
      const at = x.decided_at ? ` at ${new Date(x.decided_at).toLocaleTimeString()}` : "";
      li.textContent = `Step ${x.step}, ${target(x)}: ${x.status.replace("_", " ")}` +
        (x.answered_by ? ` by ${x.answered_by}` : "") + `${at}. ${x.reason}`;
      return li;
    }));
  }
  for (const [id, verb] of [["approve", "approve"], ["refuse", "refuse"]]) {
    $(id).addEventListener("click", async () => {
      const [ok, body] = await window.arenaPost(`/api/episodes/${episode.id}/${verb}/`);
      $("approval-error").hidden = ok;
      if (ok) showApproval(body);
      else $("approval-error").textContent = body.detail || "Could not answer.";
    });
  }

  if (!page.boards) note("Its suppliers are language models: the boards show no past steps (the decisions below hold every step).");
  showMetrics(page.metrics || {});
  let first = true;
  window.arenaSocket(`/ws/episodes/${episode.id}/`, {
    status: $("live-status"),
    onOpen(socket) { if (!first) socket.send(JSON.stringify({ type: "resume", after_step: lastStep })); first = false; },
    onMessage(message, socket) {
      if (message.type === "episode.snapshot") {
        const fresh = decisions.size === 0; // after a reconnect, the resume fills the gap
        showEpisode(message.episode);
        addDecisions(message.decisions);
        if (fresh && message.decisions.length && message.decisions[0].step > 0) loadEarlier(message.decisions[0].step);
        if (!message.decisions.length) select(-1);
        (message.approvals || []).forEach(showApproval);
      } else if (message.type === "episode.decisions") {
        addDecisions(message.decisions);
        // A resume answers one page at a time: ask for the next until caught up.
        if (message.next_after_step != null) socket.send(JSON.stringify({ type: "resume", after_step: message.next_after_step }));
      } else if (message.type === "episode.status") showEpisode(message.episode);
      else if (message.type === "episode.waiting") showWaiting(message.waiting);
      else if (message.type === "episode.approval") showApproval(message.approval);
    },
  });
})();
