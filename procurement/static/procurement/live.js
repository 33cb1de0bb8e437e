// A WebSocket that reconnects with backoff and says why it stopped (4401/4403/4404).
"use strict";
window.arenaSocket = function (path, { onMessage, onOpen, status }) {
  const refusals = { 4401: "log in again", 4403: "your role does not allow this", 4404: "not found" };
  let delay = 500, socket = null;
  const say = (text) => { if (status) status.textContent = text; };
  function connect() {
    const scheme = location.protocol === "https:" ? "wss" : "ws";
    socket = new WebSocket(`${scheme}://${location.host}${path}`);
    socket.onopen = () => { delay = 500; say("live"); if (onOpen) onOpen(socket); };
    socket.onmessage = (event) => onMessage(JSON.parse(event.data), socket);
    socket.onclose = (event) => {
      if (refusals[event.code]) { say(`stream closed: ${refusals[event.code]}`); return; }
      say(`reconnecting in ${Math.round(delay / 1000)} s…`);
      setTimeout(connect, delay);
      delay = Math.min(delay * 2, 15000);
    };
  }
  connect();
  return { send: (message) => socket && socket.readyState === 1 && socket.send(JSON.stringify(message)) };
};
// Two y-axes over one plot: ranges whose zeros sit at the same height (a bar of -0.01
// starts on the line's zero, not at the bottom), with the zero at most half-way up.
window.arenaChart = {
  zeroAlignedRanges(series, pad = 0.08) {
    const extents = series.map((ys) => {
      let neg = 0, pos = 0;
      for (const y of ys) if (Number.isFinite(y)) { neg = Math.max(neg, -y); pos = Math.max(pos, y); }
      return [neg, pos];
    });
    // zero's height as a share of the plot: what the most negative series needs, at most
    // one half (a mostly negative series is drawn around a centred zero)
    let share = 0;
    for (const [neg, pos] of extents) if (neg + pos > 0) share = Math.max(share, neg / (neg + pos));
    share = Math.min(share, 0.5);
    return extents.map(([neg, pos]) => {
      if (neg + pos === 0) pos = 1; // nothing but zeros yet: a plain 0..1 axis
      const span = Math.max(pos / (1 - share), share > 0 ? neg / share : 0) * (1 + pad);
      return [-share * span, (1 - share) * span];
    });
  },
  // As many decimals as ticks about a fifth of the range apart need: "0.02", not "0.0206".
  tickFormat([lo, hi]) {
    const step = (hi - lo) / 5;
    const decimals = step > 0 ? Math.min(6, Math.max(0, Math.ceil(-Math.log10(step)))) : 0;
    return `.${decimals}f`;
  },
};
window.arenaFormat = {
  money: (x) => x == null ? "–" : Number(x).toLocaleString(undefined, { maximumFractionDigits: 2 }),
  score: (x) => x == null ? "–" : Number(x).toFixed(3),
  text: (x) => x == null ? "" : String(x),
};
// POST (JSON) to the API with the session's CSRF token; resolves to [ok, body], never
// rejects: a lost connection or an answer that is not JSON (a proxy's or a server error
// page) comes back as [false, {detail}], so a form always says what happened.
window.arenaPost = async function (url, body) {
  const token = (document.cookie.match(/csrftoken=([^;]+)/) || [])[1] || "";
  const headers = { "X-CSRFToken": token };
  if (body !== undefined) headers["Content-Type"] = "application/json";
  let response;
  try {
    response = await fetch(url, {
      method: "POST", credentials: "same-origin", headers,
      body: body === undefined ? undefined : JSON.stringify(body),
    });
  } catch (e) {
    return [false, { detail: "Could not reach the server; nothing was sent. Try again." }];
  }
  try {
    return [response.ok, await response.json()];
  } catch (e) {
    return [false, { detail: `The server answered ${response.status} ${response.statusText}; try again.` }];
  }
};
