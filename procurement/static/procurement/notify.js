// The header's "waiting for you" indicator: escalations the user may answer and their
// sweeps that ended since they last opened it (GET /api/notifications/, every 15 s and
// when the tab regains focus). "Last opened" lives in this browser (localStorage): the
// server keeps no read state.
"use strict";
(function () {
  const button = document.getElementById("notify-button");
  if (!button) return;
  const count = document.getElementById("notify-count");
  const panel = document.getElementById("notify-panel");
  const list = document.getElementById("notify-list");
  const KEY = "arena.notifications.seen", EVERY_MS = 15000;
  let timer = null;

  function item(n, kind) {
    const li = document.createElement("li");
    li.className = kind;
    const a = document.createElement("a");
    a.href = n.url;
    a.textContent = n.text;
    li.appendChild(a);
    const at = (iso) => new Date(iso).toLocaleTimeString([], { hour: "2-digit", minute: "2-digit", timeZoneName: "short" });
    const parts = [];
    if (n.stake != null) parts.push(`${Number(n.stake).toLocaleString(undefined, { maximumFractionDigits: 2 })} at stake`);
    if (n.deadline) parts.push(`answer by ${at(n.deadline)}`);
    if (n.finished_at) parts.push(`ended ${at(n.finished_at)}`);
    if (parts.length) {
      const when = document.createElement("span");
      when.className = "muted";
      when.textContent = ` · ${parts.join(" · ")}`;
      li.appendChild(when);
    }
    return li;
  }

  async function refresh() {
    clearTimeout(timer);
    timer = setTimeout(refresh, EVERY_MS);
    if (document.hidden) return; // a background tab asks again when it is looked at
    const seen = localStorage.getItem(KEY);
    const query = seen ? `?since=${encodeURIComponent(seen)}` : "";
    let body;
    try {
      const response = await fetch(`/api/notifications/${query}`, { credentials: "same-origin" });
      if (response.status === 400 && seen) { localStorage.removeItem(KEY); return refresh(); }
      if (!response.ok) return;
      body = await response.json();
    } catch (error) { return; } // offline for a moment: the next poll tries again
    count.hidden = body.count === 0;
    count.textContent = body.count;
    button.classList.toggle("has", body.count > 0);
    button.title = body.count ? `${body.count} waiting for you` : "Nothing waiting for you";
    const items = [...body.approvals.map((n) => item(n, "approval")), ...body.sweeps.map((n) => item(n, "sweep"))];
    if (!items.length) {
      const li = document.createElement("li");
      li.className = "muted";
      li.textContent = "Nothing is waiting for you.";
      items.push(li);
    }
    list.replaceChildren(...items);
  }

  button.addEventListener("click", () => {
    // Just under the header, however many lines it wraps to on a phone.
    panel.style.top = `${document.querySelector("header").getBoundingClientRect().bottom + 4}px`;
    panel.hidden = !panel.hidden;
    button.setAttribute("aria-expanded", String(!panel.hidden));
  });
  // Ended sweeps count as seen once the panel was opened and closed, or one is followed.
  document.getElementById("notify-seen").addEventListener("click", () => {
    localStorage.setItem(KEY, new Date().toISOString());
    refresh();
  });
  list.addEventListener("click", (event) => {
    if (event.target.closest("li.sweep a")) localStorage.setItem(KEY, new Date().toISOString());
  });
  window.addEventListener("focus", refresh);
  document.addEventListener("visibilitychange", () => { if (!document.hidden) refresh(); });
  refresh();
})();
