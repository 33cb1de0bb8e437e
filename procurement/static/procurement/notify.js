// The header's "waiting for you" indicator: escalations the user may answer and their
// sweeps that ended and that they have not looked at since (GET /api/notifications/,
// every 15 s and when the tab is shown again). What was looked at lives in this browser
// (localStorage: the sweep pages opened, and when "Mark sweeps seen" was last pressed):
// the server keeps no read state.
"use strict";
(function () {
  const button = document.getElementById("notify-button");
  if (!button) return;
  const count = document.getElementById("notify-count");
  const panel = document.getElementById("notify-panel");
  const list = document.getElementById("notify-list");
  const KEY = "arena.notifications.seen", OPENED = "arena.notifications.opened", EVERY_MS = 15000;
  let timer = null;
  // Sweeps whose page this browser showed after they ended: looked at, not new.
  const opened = new Set(JSON.parse(localStorage.getItem(OPENED) || "[]"));
  const here = Number((location.pathname.match(/^\/sweeps\/(\d+)\/$/) || [])[1]);
  function lookedAt(sweeps) {
    if (!here || opened.has(here) || !sweeps.some((n) => n.sweep === here)) return;
    opened.add(here);
    localStorage.setItem(OPENED, JSON.stringify([...opened].slice(-200)));
  }

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
    lookedAt(body.sweeps);
    const sweeps = body.sweeps.filter((n) => !opened.has(n.sweep));
    const total = body.approvals.length + sweeps.length;
    count.hidden = total === 0;
    count.textContent = total;
    button.classList.toggle("has", total > 0);
    button.title = total ? `${total} waiting for you` : "Nothing waiting for you";
    const items = [...body.approvals.map((n) => item(n, "approval")), ...sweeps.map((n) => item(n, "sweep"))];
    if (!items.length) {
      const li = document.createElement("li");
      li.className = "muted";
      li.textContent = "Nothing is waiting for you.";
      items.push(li);
    }
    list.replaceChildren(...items);
  }

  // Just under the header, however many lines it wraps to on a phone.
  const place = () => { panel.style.top = `${document.querySelector("header").getBoundingClientRect().bottom + 4}px`; };
  window.addEventListener("resize", place);
  button.addEventListener("click", () => {
    place();
    panel.hidden = !panel.hidden;
    button.setAttribute("aria-expanded", String(!panel.hidden));
  });
  // Ended sweeps stop counting once their page is opened, or all at once here.
  document.getElementById("notify-seen").addEventListener("click", () => {
    localStorage.setItem(KEY, new Date().toISOString());
    refresh();
  });
  window.addEventListener("focus", refresh);
  document.addEventListener("visibilitychange", () => { if (!document.hidden) refresh(); });
  refresh();
})();
