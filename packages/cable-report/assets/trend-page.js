// trend.html's charts: uPlot (inlined before this script) over the data that
// src/history/trend-html.ts writes into the JSON element right before this script. Plain ES2019,
// no modules: the page opens from disk. Every text from the data (run ids, branches, commits,
// region and figure names, verdict words) goes into the page through textContent or the canvas,
// never as HTML.
//
// Per figure, one chart: x is the runs, oldest first (their index, labelled with the load's date),
// a line per column (each region in its palette colour, all regions in near-black), the band the
// gate judged each run of all regions against shaded in grey (uPlot's bands, between its upper and
// lower bounds), the change points as dashed verticals named by the run where the new level
// starts, and the runs above their own column's band ringed in red. Under each chart, the hovered
// run (the newest when none is) and the change points in words.
(function () {
  "use strict";
  var root = document.getElementById("charts");
  // By position, not by id: an element of the same id placed earlier in the page cannot stand in.
  var source = document.currentScript && document.currentScript.previousElementSibling;
  if (!root || !source || source.type !== "application/json" || typeof uPlot === "undefined" || typeof CableReportAxes === "undefined") return;
  var data = JSON.parse(source.textContent);
  var axes = CableReportAxes;

  var HEIGHT = 300;
  var ABOVE_COLOUR = "#d1242f";
  var BAND_STROKE = "rgba(51, 51, 51, 0.35)";
  var BAND_FILL = "rgba(51, 51, 51, 0.09)";
  var runs = data.runs;
  var xs = runs.map(function (_, i) { return i; });
  var charts = [];

  // ---- words ----

  var element = axes.element;

  /** As trend.md writes a figure: 0 decimals from 100 up, 1 from 10, else 2. */
  function figure(v) {
    if (v == null || !isFinite(v)) return "—";
    var a = Math.abs(v);
    return v.toLocaleString("en-US", { maximumFractionDigits: a >= 100 ? 0 : a >= 10 ? 1 : 2 });
  }

  function withUnit(v, unit) {
    return figure(v) + (unit === "ms" || unit === "msg/s" ? " " + unit : "");
  }

  /** A run in words: its id, date, commit, branch, label and verdict. */
  function runWords(i) {
    var r = runs[i];
    if (!r) return "";
    var parts = [r.id, r.day];
    if (r.commit) parts.push("commit " + r.commit);
    if (r.branch) parts.push("branch " + r.branch);
    if (r.label) parts.push(r.label);
    parts.push(r.words);
    return "Run " + (i + 1) + " of " + runs.length + ": " + parts.join(" · ");
  }

  /** At most `max` characters on the canvas, "…" marking a cut. */
  function cut(text, max) {
    return text.length <= max ? text : text.slice(0, max - 1) + "…";
  }

  // ---- axes ----

  /** Every run, half a run of room on either side. */
  function xRange() {
    return [-0.5, Math.max(0, runs.length - 1) + 0.5];
  }

  /** A run's date under its tick (ticks fall on whole runs only). */
  function xValues(u, splits) {
    return splits.map(function (v) { return Number.isInteger(v) && runs[v] ? runs[v].day : ""; });
  }

  // ---- what the lines do not say: change points and runs above their band ----

  function marks(f) {
    return function (u) {
      var ctx = u.ctx;
      var b = u.bbox;
      var pr = axes.pxRatio(u);
      ctx.save();
      ctx.beginPath();
      ctx.rect(b.left, b.top, b.width, b.height);
      ctx.clip();

      // Change points: one dashed vertical per run where a shown line's level moved, named by that run.
      var byRun = {};
      f.changePoints.forEach(function (c) {
        if (!u.series[c.column + 1].show) return;
        var at = byRun[c.index] || (byRun[c.index] = []);
        at.push(c.column);
      });
      ctx.font = 11 * pr + "px system-ui, sans-serif";
      ctx.textBaseline = "top";
      ctx.textAlign = "left";
      var rows = [];
      Object.keys(byRun).map(Number).sort(function (a, b) { return a - b; }).forEach(function (index) {
        var columns = byRun[index];
        var colour = data.columns[columns[columns.length - 1]].colour;
        var x = Math.round(u.valToPos(index, "x", true));
        ctx.strokeStyle = colour;
        ctx.lineWidth = 1.5 * pr;
        ctx.setLineDash([5 * pr, 4 * pr]);
        ctx.beginPath();
        ctx.moveTo(x, b.top);
        ctx.lineTo(x, b.top + b.height);
        ctx.stroke();
        ctx.setLineDash([]);
        var text = cut(runs[index].id, 32);
        var w = ctx.measureText(text).width;
        var left = x + w + 10 * pr > b.left + b.width ? x - w - 6 * pr : x + 4 * pr;
        // The first row down whose labels end before this one starts.
        var row = 0;
        while (row < rows.length && rows[row] > left - 4 * pr) row++;
        rows[row] = left + w;
        var top = b.top + (4 + 16 * row) * pr;
        ctx.fillStyle = "rgba(255, 255, 255, 0.9)";
        ctx.fillRect(left - 2 * pr, top - 1 * pr, w + 4 * pr, 15 * pr);
        ctx.fillStyle = colour;
        ctx.fillText(text, left, top);
      });

      // Runs above their own column's band: a red ring around the point.
      ctx.strokeStyle = ABOVE_COLOUR;
      ctx.lineWidth = 2 * pr;
      f.above.forEach(function (a) {
        var v = f.lines[a.column][a.index];
        if (v == null || !u.series[a.column + 1].show) return;
        ctx.beginPath();
        ctx.arc(u.valToPos(a.index, "x", true), u.valToPos(v, "y", true), 6 * pr, 0, 2 * Math.PI);
        ctx.stroke();
      });
      ctx.restore();
    };
  }

  // ---- a chart per figure ----

  var hasData = axes.hasData;

  /** The change points in words, by run: "nightly-21 (2026-10-21): eu-west-2 79.1 ms → 110 ms, all regions 86.4 ms → 120 ms". */
  function changePointWords(f) {
    if (f.changePoints.length === 0) return "Change points: none.";
    var byRun = {};
    f.changePoints.forEach(function (c) { (byRun[c.index] || (byRun[c.index] = [])).push(c); });
    return "Change points: " + Object.keys(byRun).map(Number).sort(function (a, b) { return a - b; }).map(function (index) {
      var r = runs[index];
      return r.id + " (" + r.day + "): " + byRun[index].map(function (c) {
        return data.columns[c.column].name + " " + withUnit(c.before, f.unit) + " → " + withUnit(c.after, f.unit);
      }).join(", ");
    }).join("; ") + ".";
  }

  function chart(f) {
    var card = element("section", "chart-card", null, root);
    element("h3", null, f.title, card);
    var holder = element("div", "plot", null, card);
    var runLine = element("p", "run-line", null, card);
    element("p", "change-points", changePointWords(f), card);
    if (!f.lines.some(hasData) || runs.length === 0) {
      holder.remove();
      runLine.textContent = "No run has this figure.";
      return;
    }

    var series = [{ label: "run", value: function (u, v) { return v == null || !runs[v] ? "—" : runs[v].id + " · " + runs[v].day; } }];
    var values = [xs];
    data.columns.forEach(function (c, i) {
      series.push({
        label: c.name,
        stroke: c.colour,
        width: c.all ? 2.25 : 1.5,
        spanGaps: false,
        points: { show: true, size: c.all ? 6 : 5 },
        value: function (u, v) { return withUnit(v, f.unit); },
      });
      values.push(f.lines[i]);
    });
    var bands = [];
    var high = -1;
    var low = -1;
    if (f.band) {
      high = series.length;
      low = high + 1;
      series.push({
        label: "band, all regions",
        stroke: BAND_STROKE,
        width: 1,
        dash: [3, 3],
        spanGaps: false,
        points: { show: false },
        // The whole band in one legend entry: low – high.
        value: function (u, v, s, idx) {
          return v == null || idx == null ? "—" : withUnit(f.band.low[idx], f.unit) + " – " + withUnit(v, f.unit);
        },
      });
      series.push({ label: "band low", stroke: BAND_STROKE, width: 1, dash: [3, 3], spanGaps: false, points: { show: false } });
      values.push(f.band.high, f.band.low);
      bands.push({ series: [high, low], fill: BAND_FILL });
    }

    function showRun(u) {
      var i = u.cursor.idx;
      runLine.textContent = i == null ? "Newest: " + runWords(runs.length - 1) : runWords(i);
    }

    var opts = {
      width: Math.max(300, holder.clientWidth),
      height: HEIGHT,
      scales: { x: { time: false, range: xRange }, y: { range: axes.fromZero } },
      axes: [
        { label: "run (the load's start, UTC)", labelSize: 20, space: 90, incrs: [1, 2, 3, 5, 10, 20, 50, 100, 200, 500, 1000], values: xValues },
        { label: f.unit, size: axes.axisSize, labelSize: 20 },
      ],
      series: series,
      bands: bands,
      cursor: { sync: { key: "trend", setSeries: false }, drag: { x: false, y: false } },
      legend: { live: true },
      hooks: {
        draw: [marks(f)],
        setCursor: [showRun],
        // The band is one legend entry: its lower bound follows its upper one.
        setSeries: [function (u, i) {
          if (i === high && high !== -1 && u.series[low].show !== u.series[high].show) u.setSeries(low, { show: u.series[high].show });
        }],
      },
    };
    var u = new uPlot(opts, values, holder);
    if (low !== -1) {
      var row = u.root.querySelectorAll(".u-legend .u-series")[low];
      if (row) row.style.display = "none";
    }
    showRun(u);
    charts.push(u);
  }

  function draw() {
    element("p", "chart-desc", "One point per run, oldest on the left, under the date its load started (UTC). " +
      "Shaded grey: the band the gate judged each run of all regions against, from the up-to-20 comparable runs before it (none before the 8th run). " +
      "Dashed verticals: change points, named by the run where the new level starts. Ringed in red: a run above its own column's band. " +
      "Hover for a run's values, id, commit, branch and verdict; click a legend entry to hide that line.", root);
    data.figures.forEach(chart);
  }

  draw();
  /** The uPlot instances, for the browser's console (and the tests). */
  window.reportCharts = charts;

  axes.followWidth(charts, HEIGHT);
})();
