// report.html's charts over time: uPlot (inlined before this script) over the data that
// src/html.ts writes into the JSON element right before this script. Plain ES2017, no modules: the
// page must open from disk. Every text from the data goes into the page through textContent or the
// canvas, never as HTML. The live page (report-live.js) draws it again with each update through
// CableReportPage.render, keeping what the reader chose (zoom, latency, percentiles, hidden lines).
(function () {
  "use strict";
  var root = document.getElementById("charts");
  // By position, not by id: an element of the same id placed earlier in the page cannot stand in.
  var source = document.currentScript && document.currentScript.previousElementSibling;
  if (!root || !source || source.type !== "application/json" || typeof uPlot === "undefined" || typeof CableReportAxes === "undefined") return;
  var data = JSON.parse(source.textContent);

  var HEIGHT = 280;
  var PERCENTILES = ["p50", "p95", "p99"];
  var DASH = { p50: [2, 3], p95: undefined, p99: [7, 4] };
  var TASK_DASH = [undefined, [7, 4], [2, 3], [10, 3, 2, 3], [4, 4], [1, 5]];
  // Axis arithmetic and number formats: assets/report-axes.js, inlined before the data.
  var axes = CableReportAxes;
  var INCRS = axes.INCRS, clock = axes.clock, number = axes.number, fromZero = axes.fromZero, pxRatio = axes.pxRatio, axisSize = axes.axisSize;

  var charts = [];
  var ready = false;
  var syncing = false;
  /** The x range every chart shows once someone zoomed: {min, max} in elapsed seconds. */
  var zoom = null;
  /** What the reader chose, kept across redraws: the latency and its percentiles, and each chart's hidden lines (unit|label → true). */
  var ui = { metric: null, percentiles: ["p95"], hidden: {} };

  // ---- the run's clock ----

  function utc(seconds) {
    return new Date(data.start + seconds * 1000).toISOString().slice(11, 19) + " UTC";
  }

  /**
   * The whole run on every chart: from the load's start (0:00) to the last period's end (or the last
   * scrape, or the early stop), whatever each chart's own data covers.
   */
  function runDomain() {
    var xs = [0, data.x[data.x.length - 1]];
    if (data.server) xs.push(data.server.x[data.server.x.length - 1]);
    if (data.aborted) xs.push(data.aborted.at);
    xs = xs.filter(function (v) { return typeof v === "number" && isFinite(v); });
    return { min: Math.min.apply(null, xs), max: Math.max.apply(null, xs) };
  }
  var domain = runDomain();

  /** The x range: the run's domain when uPlot ranges the chart on its data (at first, on double-click), else the zoom asked. */
  function xRange(u, min, max) {
    var xs = u.data && u.data[0];
    if (xs && xs.length > 0 && min === xs[0] && max === xs[xs.length - 1]) return [Math.min(min, domain.min), Math.max(max, domain.max)];
    return [min, max];
  }

  // ---- the hooks every chart shares ----

  /** Each phase as a light band, alternating, under the grid and the lines. */
  function drawPhases(u) {
    if (data.phases.length === 0) return;
    var ctx = u.ctx;
    var b = u.bbox;
    ctx.save();
    ctx.beginPath();
    ctx.rect(b.left, b.top, b.width, b.height);
    ctx.clip();
    data.phases.forEach(function (p, i) {
      var x0 = u.valToPos(p.from, "x", true);
      var x1 = p.to == null ? b.left + b.width : u.valToPos(p.to, "x", true);
      ctx.fillStyle = i % 2 === 0 ? "rgba(78, 121, 167, 0.10)" : "rgba(160, 160, 160, 0.10)";
      ctx.fillRect(x0, b.top, x1 - x0, b.height);
    });
    drawRecovery(u);
    ctx.restore();
  }

  /** After each spike, the time until p95 was back (orange), or on to the end when it never was (red), named along the bottom. */
  function drawRecovery(u) {
    var ctx = u.ctx;
    var b = u.bbox;
    var pr = pxRatio(u);
    (data.recovery || []).forEach(function (r) {
      var x0 = u.valToPos(r.from, "x", true);
      var x1 = r.to == null ? b.left + b.width : u.valToPos(r.to, "x", true);
      ctx.fillStyle = r.recovered ? "rgba(242, 142, 43, 0.18)" : "rgba(225, 87, 89, 0.18)";
      ctx.fillRect(x0, b.top, Math.max(2 * pr, x1 - x0), b.height);
      ctx.font = 11 * pr + "px system-ui, sans-serif";
      ctx.textBaseline = "bottom";
      ctx.textAlign = "left";
      var w = ctx.measureText(r.label).width;
      var left = Math.min(x0 + 4 * pr, b.left + b.width - w - 6 * pr);
      ctx.fillStyle = "rgba(255, 255, 255, 0.85)";
      ctx.fillRect(left - 2 * pr, b.top + b.height - 18 * pr, w + 4 * pr, 15 * pr);
      ctx.fillStyle = r.recovered ? "#a65a00" : "#c00000";
      ctx.fillText(r.label, left, b.top + b.height - 4 * pr);
    });
  }

  /** The phases' names along the top, and the abort marker, over the lines. */
  function drawMarks(u) {
    var ctx = u.ctx;
    var b = u.bbox;
    var pr = pxRatio(u);
    ctx.save();
    ctx.beginPath();
    ctx.rect(b.left, b.top, b.width, b.height);
    ctx.clip();
    ctx.font = 11 * pr + "px system-ui, sans-serif";
    ctx.textBaseline = "top";
    ctx.textAlign = "left";
    data.phases.forEach(function (p) {
      var x0 = Math.max(b.left, u.valToPos(p.from, "x", true));
      var x1 = p.to == null ? b.left + b.width : Math.min(b.left + b.width, u.valToPos(p.to, "x", true));
      if (x1 - x0 < 12 * pr) return;
      ctx.save();
      ctx.beginPath();
      ctx.rect(x0, b.top, x1 - x0, 18 * pr);
      ctx.clip();
      var w = ctx.measureText(p.name).width;
      ctx.fillStyle = "rgba(255, 255, 255, 0.8)";
      ctx.fillRect(x0 + 2 * pr, b.top + 2 * pr, w + 6 * pr, 15 * pr);
      ctx.fillStyle = "#444";
      ctx.fillText(p.name, x0 + 5 * pr, b.top + 4 * pr);
      ctx.restore();
    });
    if (data.aborted) {
      var x = u.valToPos(data.aborted.at, "x", true);
      if (x >= b.left && x <= b.left + b.width) {
        ctx.strokeStyle = "#c00000";
        ctx.lineWidth = 2 * pr;
        ctx.setLineDash([6 * pr, 3 * pr]);
        ctx.beginPath();
        ctx.moveTo(x, b.top);
        ctx.lineTo(x, b.top + b.height);
        ctx.stroke();
        var text = "aborted: " + data.aborted.condition;
        var tw = ctx.measureText(text).width;
        var left = x + tw + 10 * pr > b.left + b.width ? x - tw - 8 * pr : x + 4 * pr;
        ctx.fillStyle = "rgba(255, 255, 255, 0.85)";
        ctx.fillRect(left - 2 * pr, b.top + 20 * pr, tw + 4 * pr, 15 * pr);
        ctx.fillStyle = "#c00000";
        ctx.fillText(text, left, b.top + 22 * pr);
      }
    }
    ctx.restore();
  }

  /** A drag-zoom (or the double-click reset) in one chart applies to all. */
  function syncZoom(u, key) {
    if (key !== "x" || !ready || syncing) return;
    var range = { min: u.scales.x.min, max: u.scales.x.max };
    // Zoomed out to the whole run (a double-click): no zoom to keep, so the live page's next periods show.
    zoom = range.min <= domain.min && range.max >= domain.max ? null : range;
    syncing = true;
    charts.forEach(function (c) {
      if (c !== u) c.setScale("x", range);
    });
    syncing = false;
  }

  // ---- building blocks ----

  var element = axes.element;

  function section(title, description) {
    var s = element("section", "chart-card", null, root);
    element("h3", null, title, s);
    if (description) element("p", "chart-desc", description, s);
    return s;
  }

  var hasData = axes.hasData;

  /**
   * One uPlot chart. spec: {x, unit, series: [{label, colour, values, dash?, width?, scale?, show?}],
   * right?: unit of the right-hand axis (series with scale "y2")}.
   */
  function plot(parent, spec) {
    var holder = element("div", "plot", null, parent);
    var scales = { x: { time: false, range: xRange }, y: { range: fromZero } };
    var axes = [
      {
        label: "elapsed (m:ss); hover: UTC",
        labelSize: 20,
        incrs: INCRS,
        space: 60,
        values: function (u, splits) { return splits.map(clock); },
      },
      { label: spec.unit, size: axisSize, labelSize: 20 },
    ];
    if (spec.right) {
      scales.y2 = { range: fromZero };
      axes.push({ scale: "y2", side: 1, label: spec.right, size: axisSize, labelSize: 20, grid: { show: false } });
    }
    var series = [{ label: "time", value: function (u, v) { return v == null ? "—" : clock(v) + " · " + utc(v); } }].concat(
      spec.series.map(function (s) {
        return {
          hiddenKey: spec.unit + "|" + s.label,
          label: s.label,
          stroke: s.colour,
          width: s.width || 1.5,
          dash: s.dash,
          scale: s.scale || "y",
          show: s.show !== false && !ui.hidden[spec.unit + "|" + s.label],
          spanGaps: false,
          points: { size: 4 },
          value: function (u, v) { return number(v); },
        };
      }),
    );
    var opts = {
      width: Math.max(300, holder.clientWidth),
      height: HEIGHT,
      scales: scales,
      axes: axes,
      series: series,
      cursor: { sync: { key: "cable", setSeries: false }, drag: { x: true, y: false, setScale: true } },
      legend: { live: true },
      hooks: { drawClear: [drawPhases], draw: [drawMarks], setScale: [syncZoom] },
    };
    var wasSyncing = syncing;
    syncing = true;
    var u = new uPlot(opts, [spec.x].concat(spec.series.map(function (s) { return s.values; })), holder);
    if (zoom) u.setScale("x", zoom);
    syncing = wasSyncing;
    charts.push(u);
    return u;
  }

  /** A chart, or a line saying there is nothing to draw. */
  function plotOrNote(parent, spec, empty) {
    if (!spec.series.some(function (s) { return hasData(s.values); })) {
      element("p", "note", empty, parent);
      return null;
    }
    return plot(parent, spec);
  }

  function columnSeries(perColumn, suffix, extra) {
    return data.columns.map(function (c, i) {
      var s = { label: c.name + (suffix || ""), colour: c.colour, values: perColumn[i], width: c.all ? 2 : 1.5 };
      if (extra) for (var k in extra) s[k] = extra[k];
      return s;
    });
  }

  // ---- the charts ----

  function latencyChart() {
    var metrics = data.latency.metrics;
    if (metrics.length === 0) return;
    var card = section("Latency", "Per 10 s period, from that period's DDSketches merged across the column's tasks (ms). " +
      "Pick the percentiles and the latency; click a legend entry to hide it.");
    var controls = element("div", "controls", null, card);
    var label = element("label", null, "Latency ", controls);
    var select = element("select", null, null, label);
    select.id = "latency-metric";
    metrics.forEach(function (m) {
      var option = element("option", null, m.title + (m.approximate ? " (≈ some periods interpolated)" : ""), select);
      option.value = m.metric;
    });
    var known = metrics.some(function (m) { return m.metric === ui.metric; });
    select.value = known ? ui.metric : data.latency.main || metrics[0].metric;
    var boxes = PERCENTILES.map(function (p) {
      var l = element("label", "percentile", null, controls);
      var box = element("input", null, null, l);
      box.type = "checkbox";
      box.value = p;
      box.checked = ui.percentiles.indexOf(p) !== -1;
      l.appendChild(document.createTextNode(" " + p + (DASH[p] ? (p === "p50" ? " (dotted)" : " (dashed)") : " (solid)")));
      return box;
    });
    var area = element("div", null, null, card);
    var current = null;

    function build() {
      // The chart keeps its place among the others (the tests and the console find it there).
      var at = current ? charts.indexOf(current) : -1;
      if (current) {
        rememberHidden(current);
        charts.splice(at, 1);
        current.destroy();
        current = null;
      }
      area.textContent = "";
      var metric = select.value;
      var values = data.latency.values[metric];
      var series = [];
      boxes.filter(function (b) { return b.checked; }).forEach(function (box) {
        var p = box.value;
        columnSeries(values[p], " " + p, { dash: DASH[p] }).forEach(function (s) {
          if (p === "p95") s.width += 0.5;
          series.push(s);
        });
      });
      if (series.length === 0) {
        element("p", "note", "Tick a percentile to draw it.", area);
        return;
      }
      current = plotOrNote(area, { x: data.x, unit: "ms", series: series }, "No latency samples in any period.");
      if (current && at !== -1) charts.splice(at, 0, charts.pop());
    }

    // Only what the reader picks is kept for the next drawing: an automatic first pick follows the data.
    select.addEventListener("change", function () {
      ui.metric = select.value;
      build();
    });
    boxes.forEach(function (b) {
      b.addEventListener("change", function () {
        ui.percentiles = boxes.filter(function (x) { return x.checked; }).map(function (x) { return x.value; });
        build();
      });
    });
    build();
  }

  function simpleChart(title, description, unit, perColumn, empty) {
    var card = section(title, description);
    plotOrNote(card, { x: data.x, unit: unit, series: columnSeries(perColumn) }, empty);
  }

  function messagesChart() {
    var card = section("Messages per second",
      "Received (top) and sent (bottom) per region, averaged over each 10 s period: a broadcast fan-out receives far more than it sends, so each has its own chart.");
    plotOrNote(card, { x: data.x, unit: "received / s", series: columnSeries(data.received, " received") }, "No message received.");
    plotOrNote(card, { x: data.x, unit: "sent / s", series: columnSeries(data.sent, " sent", { dash: [7, 4] }) }, "No message sent.");
  }

  function generatorCharts() {
    if (data.generator.length === 0) return;
    var card = section("Load generator", "Each task's event-loop lag (ms: the worst second of the period, whose ten-odd samples are too few for a p99) " +
      "and CPU (% of its worker threads), per period; colour: the task's region. Over " + data.saturation.cpuPercent + "% CPU a task counts as saturated; over " +
      data.saturation.lagP99Ms + " ms lag, saturated when it was busy (the generator, not the server, sets its latencies) and starved when its CPU stayed low " +
      "(it waited for a CPU its machine's other work held: its latencies include that wait).");
    var seen = {};
    var series = function (pick) {
      seen = {};
      return data.generator.map(function (g) {
        var n = (seen[g.column] = (seen[g.column] || 0) + 1) - 1;
        return { label: g.file, colour: data.columns[g.column].colour, values: g[pick], dash: TASK_DASH[n % TASK_DASH.length] };
      });
    };
    plotOrNote(card, { x: data.x, unit: "lag, worst second (ms)", series: series("lag") }, "No event-loop lag recorded.");
    plotOrNote(card, { x: data.x, unit: "CPU (%)", series: series("cpu") }, "No CPU recorded (sidecars older than version 2).");
  }

  function serverCharts() {
    var s = data.server;
    if (!s) return;
    var b = data.serverBefore;
    var card = section("Server", "The server's own figures, scraped from its Prometheus endpoint (cable-fanout --server-metrics)." +
      (b ? " Before the load (" + b.scrapes + " scrape" + (b.scrapes === 1 ? "" : "s") + " from " + clock(b.fromS) + "), idle: " +
        number(b.vcpu) + " vCPU, " + number(b.memory) + " MiB, " + number(b.connections) + " connections; not drawn." : ""));
    plotOrNote(card, {
      x: s.x,
      unit: "vCPU",
      right: "memory (MiB)",
      series: [
        { label: "vCPU", colour: "#4e79a7", values: s.vcpu, width: 2 },
        { label: "memory MiB", colour: "#e15759", values: s.memory, width: 2, scale: "y2", dash: [7, 4] },
      ],
    }, "No CPU or memory figures.");
    plotOrNote(card, { x: s.x, unit: "connections", series: [{ label: "server connections", colour: "#333333", values: s.connections, width: 2 }] },
      "No connection figures.");
  }

  /** Which lines the reader hid in a chart, kept for the next drawing. */
  function rememberHidden(u) {
    u.series.forEach(function (s, i) { if (i > 0 && s.hiddenKey) ui.hidden[s.hiddenKey] = !s.show; });
  }

  function draw() {
    if (data.x.length === 0) {
      element("p", "note", "No 10 s periods were recorded, so there is nothing to draw over time.", root);
      return;
    }
    element("p", "chart-desc", "Time counts from the load's start (0:00). Each point is one " + data.stepS + " s period, drawn at its end: " +
      "the figure of the seconds just before it. The server's scrapes sit at their own times." +
      (data.phases.length > 0 ? " Shaded bands: the test's phases, as they ran" : "") +
      ((data.recovery || []).length > 0 ? "; after a spike, orange until the main latency's p95 was back (red: it never was)" : "") +
      ". Drag across a chart to zoom all of them; double-click to zoom out. " +
      "Hover for the values; click a legend entry to hide that line.", root);
    latencyChart();
    simpleChart("Open connections", "Each task's most open at once in the period, summed.", "connections", data.connections,
      "No open-connection figures (an engine without cable.connections_open_period_peak).");
    messagesChart();
    if (data.errors) simpleChart("Errors", "Errors of every code per 10 s period.", "errors per 10 s", data.errors, "No errors.");
    else element("p", "note", "No errors in any period.", section("Errors", null));
    simpleChart("Active virtual users", "Created so far minus completed and failed so far, at the end of each period.", "users", data.active,
      "No virtual users recorded.");
    generatorCharts();
    serverCharts();
    ready = true;
  }

  /** Draws the page again from new data (the live page's updates): the reader's choices stay. */
  function render(next) {
    charts.forEach(function (u) {
      rememberHidden(u);
      u.destroy();
    });
    charts.length = 0;
    ready = false;
    // Held at its height while it is rebuilt: the page does not shrink under a reader scrolled below it.
    root.style.minHeight = root.offsetHeight + "px";
    root.textContent = "";
    data = next;
    domain = runDomain();
    draw();
    root.style.minHeight = "";
  }

  draw();
  /** The uPlot instances, for the browser's console (and the tests). */
  window.reportCharts = charts;
  window.CableReportPage = { render: render };

  axes.followWidth(charts, HEIGHT);
})();
