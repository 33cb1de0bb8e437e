// The human seat: a form for the seven actions, generated from the action schema; ids
// come from the latest public state. The engine's coded error lands on its field and
// nothing is stored; a valid move arrives on the timeline over the socket. Each move
// names the step it plays (the latest the page has seen) and Play is disabled while one
// is in flight, so a double click or a second tab never plays a move twice: the server
// refuses a step that is no longer next with 409 and its next_step.
//
// The form is built when the action changes (nothing typed for one action carries into
// another) and only its choices and facts follow each new state: what the person typed
// and the error on a field stay until they change them. A requirement is chosen first;
// the supplier lists then hold the suppliers of its category that the engine admits now
// (the state's valid_actions, the action mask), and the facts show its prices.
"use strict";
(function () {
  const spec = JSON.parse(document.getElementById("action-spec").textContent);
  const episodeId = JSON.parse(document.getElementById("episode-page").textContent).episode.id;
  const f = window.arenaFormat;
  const form = document.getElementById("seat");
  const select = document.getElementById("seat-action");
  const fields = document.getElementById("seat-fields");
  const general = document.getElementById("seat-error");
  const play = document.getElementById("seat-submit");
  const facts = document.getElementById("seat-facts");
  const left = document.getElementById("seat-left");
  const hint = document.getElementById("seat-hint");
  const DECIDED = ["fulfilled", "failed"]; // a requirement that takes no more moves
  let state = null;
  let nextStep = 0;

  for (const action of spec) select.add(new Option(action.action_type.replace("_", " "), action.action_type));

  // Requirement first: the suppliers offered depend on it.
  const rank = (field) => (field.kind === "requirement" ? 0 : 1);
  const current = () => spec.find((a) => a.action_type === select.value);
  const formFields = () => [...current().fields].sort((a, b) => rank(a) - rank(b));
  const value = (name) => { const el = fields.querySelector(`[name="${name}"]`); return el ? el.value : ""; };

  // The engine's options for the chosen action that agree with the fields chosen above
  // ``name`` in the form (null: the state carries no mask).
  function options(name) {
    if (!state || !state.valid_actions) return null;
    const above = formFields().slice(0, formFields().findIndex((x) => x.name === name));
    return state.valid_actions.filter((o) => o.action_type === select.value && above.every((x) => {
      const allowed = o.fields[x.name], chosen = value(x.name);
      return !chosen || !allowed || !allowed.values || allowed.values.map(String).includes(chosen);
    }));
  }

  function choices(field) {
    if (!state) return [];
    const valid = options(field.name);
    const admitted = (id) => !valid || !valid.length || valid.some((o) => o.fields[field.name] && o.fields[field.name].values && o.fields[field.name].values.includes(id));
    if (field.kind === "requirement") {
      return state.requirements.filter((r) => !DECIDED.includes(r.status) && admitted(r.id)).map((r) => [r.id, `${r.id} ${r.name}`]);
    }
    const req = state.requirements.find((r) => r.id === value("requirement_id"));
    return state.suppliers
      .filter((s) => s.active && !s.rejected_by_buyer && (!req || s.categories.includes(req.category)) && admitted(s.id))
      .map((s) => [s.id, `${s.id} ${s.name}`]);
  }

  function fillChoices(input, field) {
    const kept = input.value;
    const list = choices(field);
    input.replaceChildren();
    if (!field.required) input.add(new Option("–", ""));
    for (const [id, text] of list) input.add(new Option(text, id));
    if (kept && list.some(([id]) => id === kept)) input.value = kept;
    else if (input.options.length) input.selectedIndex = 0;
  }

  function build() {
    fields.replaceChildren(...formFields().map((field) => {
      const p = document.createElement("p");
      const label = document.createElement("label");
      label.textContent = field.name.replaceAll("_", " ") + (field.required ? "" : " (optional)");
      label.htmlFor = `seat-${field.name}`;
      let input;
      if (field.kind === "supplier" || field.kind === "requirement") {
        input = document.createElement("select");
        input.addEventListener("change", follow);
      } else {
        input = document.createElement("input");
        input.type = field.kind === "text" ? "text" : "number";
        if (field.kind === "number") input.step = "any";
        if (field.kind === "integer") input.step = "1";
      }
      input.id = `seat-${field.name}`;
      input.name = field.name;
      input.dataset.kind = field.kind;
      const error = document.createElement("span");
      error.className = "error field-error";
      error.dataset.field = field.name;
      p.append(label, document.createElement("br"), input, " ", error);
      return p;
    }));
    follow();
  }

  // The choices, ranges and facts that follow the state and the ids chosen.
  function follow() {
    for (const field of formFields()) {
      const input = fields.querySelector(`[name="${field.name}"]`);
      if (input.tagName === "SELECT") fillChoices(input, field);
      else if (field.name !== "price" && (field.kind === "number" || field.kind === "integer")) {
        // The most an award's quantity or a PR's amount may be now (a price's bound is
        // only the engine's absurd-price guard: the facts show the ceiling instead).
        const range = (options(field.name) || []).map((o) => o.fields[field.name]).find((x) => x && x.high != null);
        input.placeholder = range ? `up to ${f.money(range.high)}` : "";
      }
    }
    showFacts();
  }

  function line(label, text) {
    const dt = document.createElement("dt"), dd = document.createElement("dd");
    dt.textContent = label; dd.textContent = text;
    return [dt, dd];
  }

  function showFacts() {
    if (!state) return;
    left.textContent = `Week ${state.week} (the last is ${state.weeks - 1}) · actions left this week: ${state.actions_left_this_week} of ${state.actions_per_week} (the week closes after the last, or on defer) · budget left ${f.money(state.budget.remaining)}`;
    const valid = state.valid_actions ? state.valid_actions.filter((o) => o.action_type === select.value) : null;
    hint.hidden = !valid || valid.length > 0;
    hint.textContent = `The engine admits no ${select.value.replace("_", " ")} now.`;
    const rows = [];
    const req = state.requirements.find((r) => r.id === value("requirement_id"));
    if (req) {
      const unit = req.unit || "unit";
      rows.push(line("Requirement", `${req.id} ${req.name} (${req.category}): ${req.quantity_needed} of ${req.quantity} ${unit} still needed by week ${req.deadline_week}${req.critical ? ", critical" : ""}`));
      rows.push(line("Reference price", `${f.money(req.reference_unit_price)} per ${unit}`));
      rows.push(line("Ceiling", `${f.money(req.ceiling_unit_price)} per ${unit} (the most the budget allows per unit)`));
      const prs = state.purchase_requisitions.filter((p) => p.requirement_id === req.id);
      const threshold = state.rules && state.rules.pr_threshold != null ? `; spend above ${f.money(state.rules.pr_threshold)} needs approved PRs` : "";
      const listed = prs.map((p) => `${p.id} ${f.money(p.amount)} ${p.status}${p.status === "pending" ? ` until week ${p.matures_week}` : ""}`).join(", ");
      rows.push(line("Purchase req.", (listed || "none") + threshold));
    }
    for (const name of ["supplier_id", "hedge_supplier_id"]) {
      const sup = state.suppliers.find((s) => s.id === value(name));
      if (!sup) continue;
      const unit = req ? ` per ${req.unit || "unit"}` : "";
      const list = req && sup.list_prices[req.id] != null ? `${f.money(sup.list_prices[req.id])}${unit}` : Object.entries(sup.list_prices).map(([k, v]) => `${k} ${f.money(v)}`).join(", ") || "–";
      const capacity = req && sup.capacity[req.category] != null ? `${sup.capacity[req.category]} ${req.unit || "units"}` : Object.entries(sup.capacity).map(([k, v]) => `${k} ${v}`).join(", ");
      rows.push(line(name === "supplier_id" ? "Supplier" : "Hedge supplier", `${sup.id} ${sup.name}: lead ${sup.lead_time_weeks} wk, reliability ${sup.rated_reliability}`));
      rows.push(line("List price", list));
      rows.push(line("Capacity", capacity || "–"));
      if (sup.notes.length) rows.push(line("Notes", sup.notes.join(" · ")));
      const thread = req && state.threads.find((t) => t.supplier_id === sup.id && t.requirement_id === req.id);
      if (thread) {
        const last = thread.rounds.length ? thread.rounds[thread.rounds.length - 1] : null;
        const parts = [`${thread.status}, ${thread.rounds.length} round(s)`];
        if (last && last.buyer_offer != null) parts.push(`your last offer ${f.money(last.buyer_offer)}`);
        if (thread.standing_counter != null) parts.push(`their counter ${f.money(thread.standing_counter)} until week ${thread.counter_valid_until_week}`);
        if (thread.agreed_price != null) parts.push(`agreed ${f.money(thread.agreed_price)} until week ${thread.valid_until_week}`);
        rows.push(line("Thread", parts.join(", ")));
      }
    }
    // The mask's word on the chosen option (an award's price, what an escalation does);
    // a negotiate's list price is shown above already.
    const note = (options("rationale") || []).map((o) => o.note).find((x) => x && !x.startsWith("list "));
    if (note) rows.push(line("Engine", note));
    facts.replaceChildren(...rows.flat());
  }

  function clearErrors() {
    general.hidden = true;
    for (const el of fields.querySelectorAll(".field-error")) el.textContent = "";
  }

  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    if (play.disabled) return;
    clearErrors();
    const action = { action_type: select.value };
    for (const el of fields.querySelectorAll("[name]")) {
      if (el.value === "") continue;
      action[el.name] = el.dataset.kind === "number" || el.dataset.kind === "integer" ? Number(el.value) : el.value;
    }
    play.disabled = true;
    let ok, body;
    try {
      [ok, body] = await window.arenaPost(`/api/episodes/${episodeId}/act/`, { step: nextStep, action });
    } catch (error) {
      [ok, body] = [false, { detail: `The move got no answer (${error.message}).` }];
    } finally {
      play.disabled = false;
    }
    if (ok) {
      nextStep = Math.max(nextStep, body.step + 1);
      // The words went with this move (the timeline shows them): the next starts blank.
      for (const el of fields.querySelectorAll('[data-kind="text"]')) el.value = "";
      return;
    }
    if (Number.isInteger(body.next_step)) nextStep = body.next_step;
    const field = String(body.field || "").replace(/^action\./, ""); // a parse error names action.price
    const target = field && fields.querySelector(`.field-error[data-field="${CSS.escape(field)}"]`);
    const text = body.code ? `${body.code}: ${body.message}` : body.detail || JSON.stringify(body);
    if (target) target.textContent = text;
    else { general.hidden = false; general.textContent = text; }
  });

  select.addEventListener("change", () => { clearErrors(); build(); });
  document.addEventListener("arena:state", (event) => {
    // The boards may show a past step (the scrubber): the seat plays from the latest.
    if (state && event.detail.after_step < state.after_step) return;
    state = event.detail;
    nextStep = Math.max(nextStep, state.after_step + 1);
    follow();
  });
  build();
})();
