// The supplier seat: the seated supplier's side of an episode, read from its own API
// (/api/episodes/ID/seat/) once a second while the episode runs. No live stream: the
// episode's stream carries the buyer's side, which is not the seat holder's to see.
// An answer names the step of the offer it answers and is sent once (the button is
// disabled while it is in flight); the server refuses a price rule with the field to fix.
"use strict";
(function () {
  const episodeId = JSON.parse(document.getElementById("seat-episode").textContent);
  const api = `/api/episodes/${episodeId}/`;
  const f = window.arenaFormat;
  const $ = (id) => document.getElementById(id);
  const form = $("answer");
  let turn = null, busy = false, timer = null;
  let answered = -1; // the step last answered here: a read still in flight may show it

  function setText(id, text) { $(id).textContent = text; }

  function renderTurn(t) {
    turn = t;
    $("seat-idle").hidden = !!t;
    $("seat-offer-facts").hidden = !t;
    if (form) { form.hidden = !t; form.dataset.step = t ? t.step : ""; }
    if (!t) return;
    setText("offer-item", `${t.item} (${t.requirement_id})`);
    setText("offer-quantity", t.quantity == null ? "–" : String(t.quantity));
    setText("offer-round", String(t.round));
    setText("offer-price", `${f.money(t.offer)} per unit`);
    setText("offer-message", t.buyer_message || "(nothing)");
    const p = t.private;
    renderFacts(p);
    if (form) {
      const price = $("answer-price");
      price.min = p.lowest_counter;
      if (p.last_counter != null) price.max = p.last_counter; else price.removeAttribute("max");
      const top = p.last_counter == null ? "" : ` to ${f.money(p.last_counter)}`;
      setText("answer-range", `from ${f.money(p.lowest_counter)}${top}, above the offer`);
      $("answer-submit").disabled = busy;
    }
  }

  // The supplier's own facts: of the offer waiting, else of the last one answered.
  function renderFacts(p) {
    if (!p) return;
    setText("fact-style", p.style || "–");
    setText("fact-cost", f.money(p.cost));
    setText("fact-floor", `${f.money(p.floor)}: never accept below it`);
    setText("fact-lowest", `${f.money(p.lowest_counter)}: never counter below it`);
    setText("fact-opening", f.money(p.opening));
    setText("fact-last", p.last_counter == null ? "none yet" : `${f.money(p.last_counter)}: never counter above it`);
    setText("fact-capacity", p.capacity == null ? "–" : `${p.capacity} units`);
  }

  function countdown(t) {
    if (!t) return;
    const left = Math.max(0, Math.round((Date.parse(t.deadline) - Date.now()) / 1000));
    setText("offer-countdown", `${Math.floor(left / 60)} min ${String(left % 60).padStart(2, "0")} s`);
  }

  function renderThread(rows) {
    const body = $("seat-thread").querySelector("tbody");
    body.replaceChildren();
    for (const r of rows) {
      const tr = document.createElement("tr");
      const what = { award_contract: `awards you ${r.quantity} units${r.price == null ? "" : " at " + f.money(r.price)}`, hedge: "splits the order with you", reject: "rejects you" };
      const cells = r.kind in what
        ? [r.step, r.week, what[r.kind], "", "", "", ""]
        : [r.step, r.week, `offers ${f.money(r.offer)}`, r.buyer_message, `${r.answer.replace("_", " ")}${r.price == null ? "" : " " + f.money(r.price)}`, r.message, r.by];
      const labels = ["Step", "Week", "Buyer", "Buyer says", "Answer", "Said", "By"];
      cells.forEach((c, i) => {
        const td = document.createElement("td");
        td.textContent = c == null ? "" : String(c);
        td.dataset.label = labels[i];
        tr.append(td);
      });
      body.append(tr);
    }
    $("thread-empty").hidden = rows.length > 0;
  }

  async function refresh() {
    let data;
    try {
      const response = await fetch(`${api}seat/`, { credentials: "same-origin" });
      if (!response.ok) { setText("seat-sync", `could not read the seat (${response.status})`); return; }
      data = await response.json();
    } catch (e) { setText("seat-sync", "offline, retrying…"); return; }
    const ep = data.episode;
    $("status").textContent = ep.status;
    $("status").className = `badge ${ep.status}`;
    setText("seat-sync", ep.terminal ? "ended" : "up to date");
    const waiting = data.turn && data.turn.step > answered ? data.turn : null;
    if (!turn || !waiting || turn.step !== waiting.step) renderTurn(waiting);
    countdown(waiting);
    if (!waiting) renderFacts(data.private);
    renderThread(data.thread);
    const h = data.handed_over;
    $("seat-handover").hidden = !h;
    if (h) setText("seat-handover", `No answer within ${Math.round(h.idle_seconds / 60)} minutes: the scenario's rule supplier took your seat at step ${h.step} (${new Date(h.at).toLocaleTimeString()}) and answers for the rest of the episode.`);
    $("seat-ended").hidden = !ep.terminal;
    if (ep.terminal) {  // the notice says it ended; no offer card, no idle rule left
      clearInterval(timer);
      renderTurn(null);
      $("seat-offer").hidden = true;
      $("seat-rule").hidden = true;
    }
  }

  function showError(el, text) { el.textContent = text || ""; el.hidden = !text; }

  if (form) {
    const priceBox = $("answer-price");
    const decision = () => form.querySelector("input[name=decision]:checked").value;
    const syncPrice = () => { priceBox.disabled = decision() !== "counter"; };
    form.addEventListener("change", syncPrice);
    syncPrice();
    form.addEventListener("submit", async (event) => {
      event.preventDefault();
      if (!turn || busy) return;
      showError($("answer-error"), "");
      showError($("answer-price-error"), "");
      const body = { step: turn.step, decision: decision(), message: $("answer-message").value };
      if (body.decision === "counter") {
        const price = Number(priceBox.value);
        if (!priceBox.value || !Number.isFinite(price)) { showError($("answer-price-error"), "Give a counter price."); return; }
        body.price = price;
      }
      busy = true;
      $("answer-submit").disabled = true;
      const [ok, reply] = await window.arenaPost(`${api}answer/`, body);
      busy = false;
      $("answer-submit").disabled = false;
      if (!ok) {
        // the seat's rules name their field; the serializer keys its errors by field
        const onPrice = reply.field === "price" || Array.isArray(reply.price);
        const text = reply.message || reply.detail || Object.values(reply).flat().join(" ");
        showError(onPrice ? $("answer-price-error") : $("answer-error"), text);
        return;
      }
      $("answer-message").value = "";
      priceBox.value = "";
      answered = body.step;
      turn = null;
      renderTurn(null);
      refresh();
    });
  }

  refresh();
  timer = setInterval(refresh, 1000);
})();
