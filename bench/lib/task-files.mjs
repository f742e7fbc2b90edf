// One synthetic task's files as a task writes them: Artillery's JSON report (`artillery run -o`)
// and the cable-report plugin's sketches sidecar, from periods of real DDSketches. The report
// benchmarks (report-week, report-html, report-fleet) draw their tasks through it.
import { mkdirSync, writeFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { createRequire } from "node:module";

const pkg = path.join(path.dirname(fileURLToPath(import.meta.url)), "..", "..", "packages", "cable-report");
const require = createRequire(path.join(pkg, "package.json"));
const { DDSketch } = require("@artilleryio/sketches-js");
const { encodeSketch, sidecarPathFor, SIDECAR_FORMAT, RELATIVE_ACCURACY } = await import(path.join(pkg, "dist", "sidecar.js"));
const { summarizeSketch } = await import(path.join(pkg, "dist", "merge.js"));

export { DDSketch, RELATIVE_ACCURACY, sidecarPathFor };

/** n samples with a long tail around `median` (log-normal-ish; `spread` widens it); `tail` of them 4× slower. */
export function sketchOf(median, n, next, { spread = 0.5, tail = 0 } = {}) {
  const sketch = new DDSketch({ relativeAccuracy: RELATIVE_ACCURACY });
  for (let i = 0; i < n; i++) sketch.accept(median * Math.exp(spread * (next() + next() + next() - 1.5)) * (tail > 0 && next() < tail ? 4 : 1));
  return sketch;
}

/** What Artillery writes in a report for a sketch. */
function summary(sketch) {
  const s = summarizeSketch(sketch);
  return { ...s, median: s.p50 };
}

/**
 * The report and the sidecar (as JSON text) of a task whose periods are
 * `{ period, counters, rates, histograms: {name: DDSketch}, cpuPercent }`; empty sketches are left
 * out. `periodSummaries`: Artillery's per-period summaries in the report's intermediates, as a real
 * report has them (a merge of tasks with sidecars does not read them).
 */
export function taskFiles({ periods, periodMs = 10_000, test, testRunId, phaseStarts, generator, periodSummaries = false }) {
  const whole = {};
  const totals = {};
  for (const p of periods) {
    for (const [name, sketch] of Object.entries(p.histograms)) {
      if (sketch.count === 0) delete p.histograms[name];
      else (whole[name] ??= new DDSketch({ relativeAccuracy: RELATIVE_ACCURACY })).merge(sketch);
    }
    for (const [name, value] of Object.entries(p.counters)) totals[name] = (totals[name] ?? 0) + value;
  }
  const summaries = (h) => Object.fromEntries(Object.entries(h).map(([n, s]) => [n, summary(s)]));
  const encode = (h) => Object.fromEntries(Object.entries(h).map(([n, s]) => [n, encodeSketch(s)]));
  const first = periods[0].period;
  const last = periods[periods.length - 1].period;
  const report = {
    aggregate: { period: last, counters: totals, rates: {}, firstMetricAt: first, lastMetricAt: last + periodMs - 1, summaries: summaries(whole), histograms: summaries(whole) },
    intermediate: periods.map((p) => {
      const s = periodSummaries ? summaries(p.histograms) : {};
      return { period: String(p.period), counters: p.counters, rates: p.rates, summaries: s, histograms: s };
    }),
  };
  const sidecar = {
    format: SIDECAR_FORMAT,
    version: 2,
    artilleryVersion: "2.0.34",
    testRunId,
    test,
    relativeAccuracy: RELATIVE_ACCURACY,
    aggregate: { counters: totals, rates: {}, histograms: encode(whole) },
    periods: periods.map((p) => ({ ...p, histograms: encode(p.histograms) })),
    phaseStarts,
    checks: null,
    generator,
  };
  return { report: JSON.stringify(report), sidecar: JSON.stringify(sidecar) };
}

/** Writes a task's report and its sidecar beside it, as a task leaves them. */
export function writeTaskFiles(file, { report, sidecar }) {
  mkdirSync(path.dirname(file), { recursive: true });
  writeFileSync(file, report);
  writeFileSync(sidecarPathFor(file), sidecar);
}
