// Live status for the hosted checkout page: a websocket that reconnects with backoff
// (a phone put to sleep drops it), and polling of /status when websockets keep failing or
// are refused (a page with many tabs open, a busy server: the handshake answers 429 or 503).
(function () {
  "use strict";
  var body = document.body;
  var id = body.getAttribute("data-session-id");
  if (!id) { return; }
  // Where to stop following: the server's final statuses (its state tables), not a copy.
  var FINAL = {};
  (body.getAttribute("data-final-statuses") || "").split(" ").forEach(function (status) {
    if (status) { FINAL[status] = true; }
  });
  var base = "/checkout/" + encodeURIComponent(id);
  var failures = 0;
  var socket = null;
  var pollTimer = null;
  var retryTimer = null;

  function show(status) {
    if (status && body.getAttribute("data-status") !== status) {
      body.setAttribute("data-status", status);
    }
    if (FINAL[status]) { stop(); }
  }

  function isFinal() { return FINAL[body.getAttribute("data-status")] === true; }

  function stop() {
    if (pollTimer) { clearInterval(pollTimer); pollTimer = null; }
    if (retryTimer) { clearTimeout(retryTimer); retryTimer = null; }
  }

  function pollOnce() {
    fetch(base + "/status", { cache: "no-store", credentials: "same-origin" })
      .then(function (r) { return r.ok ? r.json() : null; })
      .then(function (m) { if (m) { show(m.status); } })
      .catch(function () {});
  }

  function startPolling() {
    if (!pollTimer && !isFinal()) { pollTimer = setInterval(pollOnce, 3000); }
  }

  function connect() {
    if (isFinal()) { return; }
    var scheme = location.protocol === "https:" ? "wss:" : "ws:";
    var opened = false;
    try {
      socket = new WebSocket(scheme + "//" + location.host + base + "/ws");
    } catch (e) {
      failures += 1; startPolling(); return;
    }
    socket.onopen = function () {
      opened = true;
      failures = 0;
      if (pollTimer) { clearInterval(pollTimer); pollTimer = null; }
    };
    socket.onmessage = function (event) {
      try { show(JSON.parse(event.data).status); } catch (e) {}
    };
    socket.onclose = function () {
      socket = null;
      if (isFinal()) { return; }
      failures += 1;
      // Never opened: refused in the handshake or not reached. Poll at once and meanwhile,
      // not only after three failures: a refusal may last as long as the other tabs do.
      if (!opened && !pollTimer) { pollOnce(); }
      if (!opened || failures >= 3) { startPolling(); }
      var delay = Math.min(30000, 500 * Math.pow(2, failures)) * (0.5 + Math.random() / 2);
      retryTimer = setTimeout(connect, delay);
    };
  }

  document.addEventListener("visibilitychange", function () {
    if (!document.hidden && !isFinal()) {
      pollOnce();
      if (!socket) { if (retryTimer) { clearTimeout(retryTimer); } connect(); }
    }
  });

  var form = document.querySelector(".pay-form");
  if (form) {
    form.addEventListener("submit", function () {
      var button = form.querySelector("button[type=submit]");
      // Disable after the browser has taken the click, so the post still goes out once.
      if (button) { setTimeout(function () { button.disabled = true; }, 0); }
    });
  }

  connect();
})();
