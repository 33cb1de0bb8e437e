// A run's times (run_times.html) as the server writes them: whenever the page's status
// badge changes (queued -> running -> finished), the line is read again from a fresh copy
// of this page, so the start, the finish and the duration appear without a reload and are
// formatted in one place.
"use strict";
(function () {
  const times = document.getElementById("run-times");
  const status = document.getElementById("status");
  if (!times || !status) return;
  let shown = status.textContent.trim();

  async function refresh() {
    const response = await fetch(window.location.href, { credentials: "same-origin" });
    if (!response.ok) return;
    const fresh = new DOMParser().parseFromString(await response.text(), "text/html").getElementById("run-times");
    if (fresh) times.replaceChildren(...fresh.childNodes);
  }

  new MutationObserver(() => {
    const now = status.textContent.trim();
    if (now === shown) return;
    shown = now;
    refresh();
  }).observe(status, { childList: true, characterData: true, subtree: true });
})();
