// The history at fleet size (issue 53): the record of a 3 × 500-task run, and `cable-report trend`
// over a long history of such records.
//
//   npm run build && node bench/report-fleet.mjs --regions 3 --tasks 500 --minutes 10 --keep
//   node bench/history-scale.mjs --merged <the kept dir>/merged.json [--records 1000]
//
// Prints one JSON object: merged.json's size and the record's (what slimResults keeps), the time to
// write --records records (nightly, a little noise on every figure), and the whole `cable-report
// trend --html` over them as a user runs it (under /usr/bin/time for its peak RSS).
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { historyRecord, mergedSchema, scenarioHash } from "artillery-plugin-cable-report";

const here = path.dirname(fileURLToPath(import.meta.url));
const { values: flags } = parseArgs({ options: { merged: { type: "string" }, records: { type: "string", default: "1000" }, keep: { type: "boolean", default: false } } });
if (!flags.merged) throw new Error("--merged <merged.json> (from bench/report-fleet.mjs --keep)");
const merged = mergedSchema.parse(JSON.parse(readFileSync(flags.merged, "utf8")));
const n = Number(flags.records);
const hash = scenarioHash({ scenario: "fleet", tasksPerRegion: merged.regions[0].expectedTasks });
const dir = mkdtempSync(path.join(tmpdir(), "history-scale-"));

const started = performance.now();
let bytes = 0;
for (let i = 0; i < n; i++) {
  const record = historyRecord({
    identity: {
      id: `night-${i}`,
      kind: "run",
      label: null,
      at: Date.UTC(2024, 0, 1) + i * 86_400_000,
      scenario: { file: "fleet.yml", hash },
      target: { url: "wss://cable.example.com/cable", server: null },
      branch: "main",
      commit: null,
      tool: "0.1.0",
      regions: merged.regions.map((r) => r.name),
      tasksPerRegion: merged.regions[0].expectedTasks,
    },
    merged,
    usersOverLine: false,
    checksFailed: false,
    regressions: 0,
  });
  const text = `${JSON.stringify(record)}\n`;
  bytes = Buffer.byteLength(text);
  writeFileSync(path.join(dir, `${String(i).padStart(6, "0")}-night-${i}.json`), text);
}
const writeMs = performance.now() - started;

const bin = path.join(here, "..", "packages", "cable-report", "bin", "cable-report.js");
const t0 = performance.now();
const trend = spawnSync("/usr/bin/time", ["-f", "%M", process.execPath, bin, "trend", dir, "--last", "30", "--out", path.join(dir, "trend.md"), "--html", path.join(dir, "trend.html")], { encoding: "utf8" });
const trendMs = performance.now() - t0;
if (trend.status !== 0) throw new Error(`trend exited ${trend.status}: ${trend.stderr}`);
const rssKiB = Number(trend.stderr.trim().split("\n").pop());
console.log(
  JSON.stringify(
    {
      regions: merged.regions.length,
      tasks: merged.all.tasks,
      mergedJsonBytes: statSync(flags.merged).size,
      recordBytes: bytes,
      records: n,
      writeSeconds: Math.round(writeMs / 100) / 10,
      trendSeconds: Math.round(trendMs / 100) / 10,
      trendPeakRssMiB: Math.round(rssKiB / 1024),
      trendMdBytes: statSync(path.join(dir, "trend.md")).size,
      trendHtmlBytes: statSync(path.join(dir, "trend.html")).size,
    },
    null,
    2,
  ),
);
if (!flags.keep) rmSync(dir, { recursive: true, force: true });
