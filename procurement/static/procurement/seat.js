// The human seat: a form for the seven actions, generated from the action schema; ids
// come from the latest public state. The engine's coded error lands on its field and
// nothing is stored; a valid move arrives on the timeline over the socket. Each move
// names the step it plays (the latest the page has seen) and Play is disabled while one
// is in flight, so a double click or a second tab never plays a move twice: the server
// refuses a step that is no longer next with 409 and its next_step.
"use strict";
(function () {
  const spec = JSON.parse(document.getElementById("action-spec").textContent);
  const episodeId = JSON.parse(document.getElementById("episode-page").textContent).episode.id;
  const form = document.getElementById("seat");
  const select = document.getElementById("seat-action");
  const fields = document.getElementById("seat-fields");
  const general = document.getElementById("seat-error");
  const play = document.getElementById("seat-submit");
  let state = null;
  let nextStep = 0;

  for (const action of spec) select.add(new Option(action.action_type.replace("_", " "), action.action_type));

  function options(kind) {
    if (!state) return [];
    if (kind === "supplier") return state.suppliers.map((s) => [s.id, `${s.id} ${s.name}`]);
    return state.requirements.filter((r) => r.status === "open").map((r) => [r.id, `${r.id} ${r.name}`]);
  }

  function render() {
    const action = spec.find((a) => a.action_type === select.value);
    const kept = Object.fromEntries([...fields.querySelectorAll("[name]")].map((el) => [el.name, el.value]));
    fields.replaceChildren(...action.fields.map((f) => {
      const p = document.createElement("p");
      const label = document.createElement("label");
      label.textContent = f.name.replaceAll("_", " ") + (f.required ? "" : " (optional)");
      label.htmlFor = `seat-${f.name}`;
      let input;
      if (f.kind === "supplier" || f.kind === "requirement") {
        input = document.createElement("select");
        if (!f.required) input.add(new Option("–", ""));
        for (const [value, text] of options(f.kind)) input.add(new Option(text, value));
      } else {
        input = document.createElement("input");
        input.type = f.kind === "text" ? "text" : "number";
        if (f.kind === "number") input.step = "any";
        if (f.kind === "integer") input.step = "1";
      }
      input.id = `seat-${f.name}`;
      input.name = f.name;
      input.dataset.kind = f.kind;
      // Keep what was typed or chosen across a re-render (the boards move after each
      // move); never an empty choice over a real one.
      if (kept[f.name]) input.value = kept[f.name];
      if (input.tagName === "SELECT" && input.selectedIndex < 0 && input.options.length) input.selectedIndex = 0;
      const error = document.createElement("span");
      error.className = "error field-error";
      error.dataset.field = f.name;
      p.append(label, document.createElement("br"), input, " ", error);
      return p;
    }));
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
    if (ok) { nextStep = Math.max(nextStep, body.step + 1); return; }
    if (Number.isInteger(body.next_step)) nextStep = body.next_step;
    const field = String(body.field || "").replace(/^action\./, ""); // a parse error names action.price
    const target = field && fields.querySelector(`.field-error[data-field="${CSS.escape(field)}"]`);
    const text = body.code ? `${body.code}: ${body.message}` : body.detail || JSON.stringify(body);
    if (target) target.textContent = text;
    else { general.hidden = false; general.textContent = text; }
  });

  select.addEventListener("change", () => { clearErrors(); render(); });
  document.addEventListener("arena:state", (event) => {
    state = event.detail;
    nextStep = Math.max(nextStep, state.after_step + 1);
    render();
  });
  render();
})();
