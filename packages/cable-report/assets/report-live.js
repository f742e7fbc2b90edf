// The live page's updates (src/live-server.ts): one event stream back to where the page came from.
// Each `update` carries the page's parts (html.ts PageParts): the headline and tables, as report.html
// has them (HTML made by html.ts, where text from outside is already escaped), and the charts' data,
// drawn again by report-page.js. `final`: the run's report.html is written; reloading shows it.
(function () {
  "use strict";
  var summary = document.getElementById("summary");
  var tables = document.getElementById("tables");
  if (!summary || !tables || typeof EventSource === "undefined" || !window.CableReportPage) return;
  var STATES = { ok: true, warning: true, failed: true, running: true };
  var stream = new EventSource("events");
  /** Each update drawn, for the tests and the browser's console: when its figures were read, when drawn, how many periods. */
  window.cableLive = { updates: 0, lastAt: null, drawn: [] };

  stream.addEventListener("update", function (event) {
    var parts;
    try {
      parts = JSON.parse(event.data);
    } catch (e) {
      return;
    }
    if (!parts || !parts.data || !Array.isArray(parts.data.x)) return;
    document.title = String(parts.title);
    // The folds the reader opened stay open (by their place among the page's folds).
    var open = openFolds();
    summary.innerHTML = String(parts.summary);
    summary.setAttribute("data-state", STATES[parts.state] ? parts.state : "warning");
    tables.innerHTML = String(parts.tables);
    reopen(open);
    window.CableReportPage.render(parts.data);
    window.cableLive.updates++;
    window.cableLive.lastAt = Date.now();
    if (window.cableLive.drawn.length < 10000) window.cableLive.drawn.push({ readAt: parts.readAt, drawnAt: window.cableLive.lastAt, periods: parts.data.x.length });
  });

  function folds() {
    return Array.prototype.slice.call(document.querySelectorAll("#summary details, #tables details"));
  }
  function openFolds() {
    var open = [];
    folds().forEach(function (d, i) { if (d.open) open.push(i); });
    return open;
  }
  function reopen(open) {
    var all = folds();
    open.forEach(function (i) { if (all[i]) all[i].open = true; });
  }

  stream.addEventListener("status", function (event) {
    var status = document.getElementById("live-status");
    try {
      if (status) status.innerHTML = String(JSON.parse(event.data).html);
    } catch (e) {
      // a damaged event: the next one replaces it
    }
  });

  stream.addEventListener("final", function () {
    stream.close();
    window.location.reload();
  });
})();
