// Overview: episode rows follow their status live over /ws/overview/.
"use strict";
(function () {
  const body = document.querySelector("#episodes tbody");
  const f = window.arenaFormat;
  function row(e) {
    let tr = body.querySelector(`tr[data-id="${e.id}"]`);
    if (!tr) {
      const empty = body.querySelector("tr.empty");
      if (empty) empty.remove();
      tr = document.createElement("tr");
      tr.dataset.id = e.id;
      const cells = [`<a href="/episodes/${e.id}/">${e.id}</a>`, e.scenario, e.policy];
      tr.innerHTML = cells.map(() => "<td></td>").join("") + '<td class="num" data-field="seed"></td>' +
        '<td data-field="status"></td><td class="num" data-field="steps"></td><td class="num" data-field="score"></td>';
      tr.children[0].innerHTML = cells[0];
      for (let i = 1; i < 3; i++) tr.children[i].textContent = f.text(cells[i]);
      body.prepend(tr);
    }
    // a sealed episode's seed is null until it ends (a person's seat)
    tr.querySelector('[data-field="seed"]').textContent = e.seed === null ? "sealed" : e.seed;
    tr.querySelector('[data-field="status"]').innerHTML = `<span class="badge ${e.status}"></span>`;
    tr.querySelector(".badge").textContent = e.status;
    if (e.waiting) tr.querySelector(".badge").title = e.waiting.text; // "2nd in the model lane"
    tr.querySelector('[data-field="steps"]').textContent = e.steps;
    tr.querySelector('[data-field="score"]').textContent = f.score(e.score);
  }
  function sweepRow(s) {
    const tr = document.querySelector(`#sweeps tr[data-id="${s.id}"]`);
    if (!tr) return; // a new sweep shows on the next visit
    tr.querySelector('[data-field="status"]').innerHTML = `<span class="badge ${s.status}"></span>`;
    tr.querySelector('[data-field="status"] .badge').textContent = s.status;
    tr.querySelector('[data-field="cells"]').textContent = `${s.done_cells} / ${s.total_cells}`;
    const pct = s.total_cells ? (100 * s.done_cells) / s.total_cells : 0;
    tr.querySelector('[data-field="bar"]').style.width = `${pct}%`;
  }
  function approval(a) {
    const list = document.getElementById("approvals");
    const old = list.querySelector(`li[data-episode="${a.episode}"]`);
    if (old) old.remove();
    if (a.status === "pending") {
      const li = document.createElement("li");
      li.dataset.episode = a.episode;
      const link = document.createElement("a");
      link.href = `/episodes/${a.episode}/`;
      link.textContent = `Episode ${a.episode}`;
      li.append(link, `: escalate ${[a.supplier_id, a.requirement_id].filter(Boolean).join(" ")} (step ${a.step})`);
      list.appendChild(li);
    }
    document.getElementById("approvals-card").hidden = list.children.length === 0;
  }
  window.arenaSocket("/ws/overview/", {
    status: document.getElementById("live-status"),
    onMessage(message) {
      if (message.type === "overview.snapshot") {
        message.episodes.slice().reverse().forEach(row);
        message.sweeps.forEach(sweepRow);
        (message.approvals || []).forEach(approval);
      }
      else if (message.type === "episode.status" && message.episode.sweep == null) row(message.episode);
      else if (message.type === "sweep.progress") sweepRow(message.sweep);
      else if (message.type === "episode.approval") approval(message.approval);
    },
  });
})();
