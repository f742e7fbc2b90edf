// The console's connection peak is the real peak and matches report.md's. Connections held
// across more than one 10 s period make the difference: the per-period peaks add up to more than
// the peak, which is what Artillery's summary used to show.
import { execFile } from "node:child_process";
import { mkdirSync, mkdtempSync, readFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { runArtillery } from "cable-test-servers";
import { startTarget, type LocalTarget } from "cable-local-target";
import { afterAll, beforeAll, expect, test } from "vitest";

const repo = path.resolve(__dirname, "../../..");
const VUS = 12;
let target: LocalTarget;
beforeAll(async () => {
  target = await startTarget({ port: 0 });
});
afterAll(() => target?.close());

/** The `max` of a histogram in the console's final summary. */
function consoleMax(output: string, metric: string): number | undefined {
  const summary = output.slice(output.lastIndexOf("Summary report"));
  const block = summary.slice(summary.indexOf(`${metric}:\n`));
  const m = /^\s+max:\D*?([\d.]+)\s*$/m.exec(block.split("\n").slice(0, 8).join("\n"));
  return m ? Number(m[1]) : undefined;
}

test("the console's cable.open_connections_peak max equals report.md's peak", async () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), "console-peak-"));
  mkdirSync(path.join(dir, "local"));
  const run = await runArtillery({
    script: {
      config: {
        target: target.cableUrl,
        engines: { cable: {} },
        phases: [{ duration: 1, arrivalCount: VUS }],
      },
      // 11 s: every connection is open in at least two 10 s periods.
      scenarios: [{ engine: "cable", flow: [{ connect: { cookies: { uid: "peak-{{ $uuid }}" } } }, { subscribe: { channel: "ChatChannel", params: { id: "peak" } } }, { think: 11 }] }],
    },
    outputDir: path.join(dir, "local"),
    timeoutMs: 60_000,
  });
  expect(run.code, run.output).toBe(0);
  expect(run.report!.aggregate.counters["vusers.completed"], run.output).toBe(VUS);
  const periodPeaks = run.report!.intermediate.map((p) => p.counters["cable.connections_open_period_peak"] ?? 0);
  expect(periodPeaks.filter((v) => v > 0).length, "held across periods").toBeGreaterThan(1);

  const shown = consoleMax(run.output, "cable.open_connections_peak");
  expect(shown, run.output).toBe(VUS);

  const merged = path.join(dir, "merged.json");
  await promisify(execFile)(process.execPath, [path.join(repo, "packages/cable-report/bin/cable-report.js"), dir, "--out", path.join(dir, "report.md"), "--json", merged]);
  const report = JSON.parse(readFileSync(merged, "utf8")) as { all: { peakOpenConnections: number | null } };
  expect(report.all.peakOpenConnections).toBe(shown);
  // The console no longer shows a counter whose whole-run total reads as a peak.
  const summary = run.output.slice(run.output.lastIndexOf("Summary report"));
  expect(summary).not.toMatch(/^cable\.connections_open_peak:\s*\.*\s*\d+\s*$/m);
}, 90_000);
