// What report.html's and trend.html's charts share, apart from the charts (report-page.js,
// trend-page.js) that use it: axis arithmetic, number formats, an element with text only, and the
// charts following the window's width. Plain ES2017, no modules, one global (the pages open from
// disk and their scripts are inlined, in this order: uPlot, this, the page's data, the page's script).
var CableReportAxes = (function () {
  "use strict";
  /** Steps of the time axis, in seconds. */
  var INCRS = [1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1200, 1800, 3600, 7200, 10800, 21600, 43200, 86400];

  /** Elapsed seconds as m:ss (h:mm:ss past an hour). */
  function clock(seconds) {
    var sign = seconds < 0 ? "-" : "";
    var s = Math.round(Math.abs(seconds));
    var h = Math.floor(s / 3600);
    var m = Math.floor((s % 3600) / 60);
    var ss = String(s % 60).padStart(2, "0");
    return sign + (h > 0 ? h + ":" + String(m).padStart(2, "0") + ":" + ss : m + ":" + ss);
  }

  function number(v) {
    return v == null ? "—" : v.toLocaleString("en-US", { maximumFractionDigits: 1 });
  }

  /** A round top a little above the largest value, so the y-axis always starts at 0. */
  function niceTop(max) {
    if (!(max > 0)) return 1;
    var target = max * 1.08;
    var magnitude = Math.pow(10, Math.floor(Math.log10(target)));
    var steps = [1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10];
    for (var i = 0; i < steps.length; i++) if (steps[i] * magnitude >= target) return steps[i] * magnitude;
    return target;
  }

  function fromZero(u, min, max) {
    return [0, niceTop(max)];
  }

  function pxRatio(u) {
    return u.pxRatio || uPlot.pxRatio || window.devicePixelRatio || 1;
  }

  /** A y-axis as wide as its longest tick label (uPlot's axis-size recipe). */
  function axisSize(u, values, axisIdx, cycleNum) {
    var axis = u.axes[axisIdx];
    if (cycleNum > 1) return axis._size;
    var size = axis.ticks.size + axis.gap;
    var longest = (values || []).reduce(function (a, v) { return v.length > a.length ? v : a; }, "");
    if (longest !== "") {
      u.ctx.font = axis.font[0];
      size += u.ctx.measureText(longest).width / pxRatio(u);
    }
    // At least a 5-digit label's width, so that most charts' plots line up one above the other.
    return Math.max(56, Math.ceil(size));
  }

  /** An element with text from the data as text only (textContent: never markup). */
  function element(tag, className, text, parent) {
    var el = document.createElement(tag);
    if (className) el.className = className;
    if (text != null) el.textContent = text;
    if (parent) parent.appendChild(el);
    return el;
  }

  function hasData(values) {
    return values.some(function (v) { return v != null; });
  }

  /** Every chart of `charts` (as it grows) resized to its holder's width, 100 ms after the window's last resize. */
  function followWidth(charts, height) {
    var pending = 0;
    window.addEventListener("resize", function () {
      clearTimeout(pending);
      pending = setTimeout(function () {
        charts.forEach(function (u) {
          u.setSize({ width: Math.max(300, u.root.parentNode.clientWidth), height: height });
        });
      }, 100);
    });
  }

  return { INCRS: INCRS, clock: clock, number: number, niceTop: niceTop, fromZero: fromZero, pxRatio: pxRatio, axisSize: axisSize, element: element, hasData: hasData, followWidth: followWidth };
})();
