// The episode page: decisions arrive over the socket (snapshot, then live batches; on
// reconnect it resumes after its last step; a hole in the steps is filled from the API),
// the boards show the public state after the scrubber's step, the chart the running
// score and each step's reward.
"use strict";
(function () {
  const page = JSON.parse(document.getElementById("episode-page").textContent);
  const episode = page.episode;
  const f = window.arenaFormat;
  const meaning = window.arenaMeaning(page.units, page.glossary); // units, currency, glossary
  const $ = (id) => document.getElementById(id);
  const decisions = new Map(); // step -> decision
  let lastStep = -1, follow = true, selected = -1, chartQueued = false;

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
    if (actor === "llm") {
      out.push(["llm", `LLM ${model}`]);
      if (d.llm_error) out.push(["repair", "reply cut", d.llm_error]);  // closed where the token limit cut it
    } else if (buyerFellBack) out.push(["fallback", `fallback: ${actor.slice(9)}`, d.llm_error || "the model's reply was unusable"]);
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
    if (d.message && d.message !== info.message) { // the buyer's own words, above the answer
      const own = document.createElement("div"); own.className = "message timeline-own"; own.textContent = `Buyer: ${d.message}`; msg.appendChild(own);
    }
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
    // Keep step order when a hole is filled: the first row of a later step, by bisection.
    const rows = tbody.rows;
    let lo = 0, hi = rows.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (Number(rows[mid].dataset.step) < d.step) lo = mid + 1; else hi = mid;
    }
    tbody.insertBefore(tr, rows[lo] || null);
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
    fillHoles();
    if (!added) return;
    $("step-count").textContent = decisions.size;
    $("invalid-count").textContent = [...decisions.values()].filter((d) => !d.valid).length;
    $("scrubber").max = lastStep;
    if (follow) select(lastStep);
    else showScore();
    queueChart();
  }

  // Every step from 0 to the latest the page has seen, or the episode says it stored, must
  // be on the page: a lost live event, or one that overtook the snapshot, leaves a hole,
  // filled from the API (one fill at a time; the rows are keyed by step, so a decision
  // that also arrives live is shown once).
  let stored = 0, whole = -1, filling = false;
  function fillHoles() {
    while (decisions.has(whole + 1)) whole++;
    if (filling || whole + 1 >= Math.max(stored, lastStep + 1)) return;
    filling = true;
    fetchAfter(whole).then((progress) => { filling = false; if (progress) fillHoles(); },
      () => { filling = false; });
  }

  async function fetchAfter(after) {
    // The decisions after `after`, page by page, up to the next step the page holds.
    let end = after + 1;
    while (end <= lastStep && !decisions.has(end)) end++;
    const before = decisions.size;
    let url = `/api/episodes/${episode.id}/decisions/?after_step=${after}&page_size=2000`;
    while (url) {
      const response = await fetch(url, { credentials: "same-origin" });
      if (!response.ok) break;
      const body = await response.json();
      addDecisions(body.results);
      const tail = body.results.length ? body.results[body.results.length - 1].step : end;
      url = tail < end ? body.next : null;
    }
    return decisions.size > before;
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
      const [scoreRange, rewardRange] = window.arenaChart.zeroAlignedRanges([score, reward]);
      const axis = (title, range) => ({
        // "auto": an overlaying axis would sync its ticks to the other's grid (0.0406...)
        title: { text: title }, range, autorange: false, tickmode: "auto", nticks: 6, tickformat: window.arenaChart.tickFormat(range),
        zeroline: true, zerolinecolor: "#888", zerolinewidth: 1, fixedrange: true,
      });
      Plotly.react("chart", [
        { x: steps, y: score, name: "running score (after the step)", mode: "lines", line: { color: "#2b5cab" },
          hovertemplate: "step %{x}: score %{y:.3f}<extra></extra>" },
        { x: steps, y: reward, name: "reward (score change − penalty)", type: "bar", marker: { color: "#4fc3f7" }, yaxis: "y2",
          hovertemplate: "step %{x}: reward %{y:+.4f}<extra></extra>" },
      ], {
        margin: { t: 10, r: 60, b: 40, l: 60 }, showlegend: true, legend: { orientation: "h", y: 1.18 },
        xaxis: { title: { text: "step (decision number)" }, fixedrange: true },
        yaxis: axis("score (0–1, higher is better)", scoreRange),
        yaxis2: { ...axis("reward per step (score points)", rewardRange), overlaying: "y", side: "right", showgrid: false },
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
    showScore();
    queueChart();
    wantState(step);
  }

  // The Score card says the score after the scrubber's step (the latest while following).
  function showScore() {
    const d = decisions.get(selected);
    const latest = follow || selected === lastStep;
    $("score-label").textContent = selected < 0 ? "Score before step 0"
      : latest ? `Running score (latest, step ${selected})` : `Score after step ${selected}`;
    $("running-score").textContent = d ? f.score(d.running_score) : "–";
    $("week").textContent = d ? (d.state && d.state.week != null ? d.state.week : d.week) : "–";
    if (d && d.state) showBudget(d.state.budget_committed, d.state.budget_remaining);
  }

  // The boards follow the wanted step with one request in flight: the next one is asked
  // as soon as it answers, so a stream faster than the server never starves them, and no
  // answer can overtake a later one. An answer for a step passed meanwhile is still shown
  // (closer than nothing) until the wanted one's arrives.
  let wanted = null, shown = null, loading = false;
  function wantState(step) {
    wanted = step;
    if (!loading) loadStates();
  }

  async function loadStates() {
    loading = true;
    try {
      while (wanted !== shown) {
        const step = wanted;
        const response = await fetch(`/api/episodes/${episode.id}/state/?step=${step}`, { credentials: "same-origin" });
        const body = await response.json();
        if (!response.ok) { note(body.detail || JSON.stringify(body)); break; } // the next step asks again
        $("boards-note").hidden = true;
        renderBoards(body);
        shown = step;
      }
    } catch (error) {
      note(`The boards could not be loaded: ${error}`);
    } finally {
      loading = false;
    }
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
    stored = Math.max(stored, e.steps || 0);
    fillHoles();
    $("status").textContent = e.status;
    $("status").className = `badge ${e.status}`;
    showWaiting(e.waiting);
    const terminal = ["finished", "failed", "cancelled"].includes(e.status);
    for (const id of ["cancel", "seat", "approval"]) if ($(id) && terminal) $(id).hidden = true;
    showHandover(e.handed_over);
    if (e.status === "finished" || e.status === "failed") loadMetrics();
  }

  // A moment in the viewer's own time zone, named: "27 Nov 2026, 18:52:01 CET".
  const WHEN = { day: "numeric", month: "short", year: "numeric", hour: "2-digit", minute: "2-digit", second: "2-digit", timeZoneName: "short" };

  // An idle seat passed to its fallback policy: say so where the form was.
  function showHandover(h) {
    if (!h) return;
    if ($("seat")) $("seat").hidden = true;
    const at = new Date(h.at).toLocaleString([], WHEN);
    $("seat-handover").hidden = false;
    const moves = h.step ? `after ${h.step} move${h.step === 1 ? "" : "s"} by the person` : "before any move by the person";
    $("seat-handover").textContent = `The buyer's seat was idle for ${h.idle_seconds} s, so at ${at} (${moves}) ` +
      `the ${h.to} policy took it over and plays the rest of this episode; its moves appear below.`;
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
  let countdown = null;
  function mayNotAnswer(a) {
    const viewer = page.viewer || {};
    if (a.barred && a.barred[viewer.username]) return a.barred[viewer.username];
    const rank = (role) => (page.roles || []).indexOf(role);
    if (rank(viewer.role) < rank(a.approver_role)) return `You hold the ${viewer.role} role; this scenario's escalations are answered by ${a.approvers}.`;
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
    clearInterval(countdown);
    if (waiting) {
      const until = new Date(waiting.deadline).toLocaleString([], WHEN);
      const stake = waiting.stake != null ? `, ${meaning.money(waiting.stake)} at stake` : "";
      const refusal = waiting.standing_refusal;
      const then = refusal
        ? `${refusal.by} refused this requirement's escalation at ${new Date(refusal.at).toLocaleTimeString([], { timeZoneName: "short" })}: only someone else may approve it now; without an answer in time, the refusal stands.`
        : "Without an answer in time, the scenario's rule decides.";
      $("approval-text").textContent = `The buyer asks to escalate ${target(waiting)} (step ${waiting.step}${stake}). ${then}`;
      $("approval-subject").textContent = waiting.subject || (waiting.stake != null ? meaning.money(waiting.stake) : "–");
      $("approval-rationale").textContent = waiting.rationale || "The buyer gave no reason.";
      $("approval-if-approved").textContent = waiting.supplier_id
        ? `management calls ${waiting.supplier_id}: its standing counter on ${waiting.requirement_id} moves toward its floor, and the buyer may award at the new price.`
        : `the pending PR for ${waiting.requirement_id} is approved now instead of when it matures, so the buyer may award against it.`;
      $("approval-if-refused").textContent = `nothing happens and nothing is spent; the refusal stands for ${waiting.requirement_id}: a later escalation on it is reviewed once, by someone else.`;
      $("approval-deadline").textContent = until;
      const tick = () => {
        const s = Math.max(0, Math.round((new Date(waiting.deadline) - Date.now()) / 1000));
        $("approval-countdown").textContent = s > 0 ? `${Math.floor(s / 60)} min ${String(s % 60).padStart(2, "0")} s left` : "time is up: the rule answers";
      };
      tick();
      countdown = setInterval(tick, 1000);
      const why = mayNotAnswer(waiting);
      $("approval-why").hidden = !why;
      $("approval-why").textContent = why ? `No buttons for you. ${why} You may watch: the card updates when someone answers.` : "";
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

  showMetrics(page.metrics || {});
  let first = true;
  window.arenaSocket(`/ws/episodes/${episode.id}/`, {
    status: $("live-status"),
    onOpen(socket) { if (!first) socket.send(JSON.stringify({ type: "resume", after_step: lastStep })); first = false; },
    onMessage(message, socket) {
      if (message.type === "episode.snapshot") {
        // The snapshot holds the latest decisions: fillHoles fetches the earlier ones.
        addDecisions(message.decisions);
        showEpisode(message.episode);
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
