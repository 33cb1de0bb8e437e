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
window.arenaFormat = {
  money: (x) => x == null ? "–" : Number(x).toLocaleString(undefined, { maximumFractionDigits: 2 }),
  score: (x) => x == null ? "–" : Number(x).toFixed(3),
  text: (x) => x == null ? "" : String(x),
};
// POST (JSON) to the API with the session's CSRF token; resolves to [ok, body].
window.arenaPost = async function (url, body) {
  const token = (document.cookie.match(/csrftoken=([^;]+)/) || [])[1] || "";
  const headers = { "X-CSRFToken": token };
  if (body !== undefined) headers["Content-Type"] = "application/json";
  const response = await fetch(url, {
    method: "POST", credentials: "same-origin", headers,
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return [response.ok, await response.json()];
};
