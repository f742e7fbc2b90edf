// The history gate's false-alarm and detection rates on real runs (issue 53): the real
// `cable-fanout run --local --history` against the local target, whose broadcasts are held back
// --delay-ms (a server with a known latency), real Artillery, chat.yml shortened.
//
//   node bench/history-aa.mjs [--aa 20] [--slow 10] [--delay-ms 40] [--slowdown 1.3]
//                             [--threshold 10] [--seconds 6] [--keep]
//
// 1. A/A: --aa runs at --delay-ms, one after another, each kept (branch main). Each was also gated
//    by the CLI as it ran (--fail-on-regression --threshold): the two-run comparison while the
//    history held fewer than 8 runs, the band after; those exit codes are counted.
// 2. Leave-one-out: each A/A run judged against the band of the other --aa − 1 (cable-report's
//    judgeAgainstHistory, what the CLI runs): alarms, and the largest t-score of any figure.
// 3. Slowdown: --slow runs at --delay-ms × --slowdown, each through the CLI gated against the A/A
//    history (kept on another branch, so that they never join main's band): caught when it exits 1.
// Prints one JSON object; docs/benchmarks.md has the figures and how they were taken.
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, readdirSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { startTarget } from "cable-local-target";
import { judgeAgainstHistory, openHistory } from "artillery-plugin-cable-report";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const { values: flags } = parseArgs({
  options: {
    aa: { type: "string", default: "20" },
    slow: { type: "string", default: "10" },
    "delay-ms": { type: "string", default: "40" },
    slowdown: { type: "string", default: "1.3" },
    threshold: { type: "string", default: "10" },
    seconds: { type: "string", default: "6" },
    keep: { type: "boolean", default: false },
  },
});
const AA = Number(flags.aa);
const SLOW = Number(flags.slow);
const DELAY = Number(flags["delay-ms"]);
const SLOWDOWN = Number(flags.slowdown);
const THRESHOLD = Number(flags.threshold);
const LOAD = JSON.stringify({ config: { phases: [{ duration: Number(flags.seconds), arrivalRate: 3 }] } });
const CHAT = path.join(root, "scenarios/chat.yml");
const FANOUT = path.join(root, "packages/cable-fanout/bin/cable-fanout.js");

const work = mkdtempSync(path.join(os.tmpdir(), "history-aa-"));
const history = path.join(work, "history");
const target = await startTarget({ port: 0, faults: { broadcastDelayMs: DELAY } });

function fanout(args, env) {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [FANOUT, ...args], { cwd: work, env: { ...process.env, ARTILLERY_DISABLE_TELEMETRY: "true", GITHUB_SHA: "bench", ...env }, stdio: ["ignore", "pipe", "pipe"] });
    let stderr = "";
    child.stderr.on("data", (d) => (stderr += d));
    child.stdout.resume();
    const timer = setTimeout(() => child.kill("SIGKILL"), 180_000);
    child.on("exit", (code) => {
      clearTimeout(timer);
      resolve({ code, stderr });
    });
  });
}

const run = (env) =>
  fanout(["run", CHAT, "--local", "--regions", "local", "--target", target.cableUrl, "--overrides", LOAD, "--start-delay", "1", "--out", path.join(work, "results"), "--history", history, "--fail-on-regression", `${THRESHOLD}%`], env);

const started = Date.now();
const cliAlarms = [];
for (let i = 0; i < AA; i++) {
  const { code, stderr } = await run({ GITHUB_REF_NAME: "main", GITHUB_HEAD_REF: "" });
  if (code !== 0 && code !== 1) throw new Error(`A/A run ${i + 1} exited ${code}:\n${stderr.slice(-3000)}`);
  if (code === 1) cliAlarms.push({ run: i + 1, lines: stderr.split("\n").filter((l) => l.startsWith("regression:")) });
  process.stderr.write(`A/A ${i + 1}/${AA}: exit ${code}\n`);
}

const { records } = await openHistory(history).read();
const aa = records.filter((r) => r.run.branch === "main");
const leaveOneOut = aa.map((record) => {
  const others = aa.filter((r) => r !== record);
  const verdict = judgeAgainstHistory(record.results, { ...record.run, id: record.run.id }, { records: others, skipped: [] }, { threshold: THRESHOLD, window: AA });
  if (verdict.mode !== "band") throw new Error(`leave-one-out: ${verdict.mode}`);
  const scores = verdict.figures.filter((f) => f.position && Number.isFinite(f.position.score)).map((f) => f.position.score);
  return { run: record.run.id, alarms: verdict.regressions.map((r) => `${r.row} / ${r.column}`), maxScore: Math.max(...scores), judged: scores.length, confidence: verdict.confidence };
});

target.setFaults({ broadcastDelayMs: Math.round(DELAY * SLOWDOWN) });
const slow = [];
for (let i = 0; i < SLOW; i++) {
  const { code, stderr } = await run({ GITHUB_REF_NAME: "slow", GITHUB_HEAD_REF: "" });
  if (code !== 0 && code !== 1) throw new Error(`slow run ${i + 1} exited ${code}:\n${stderr.slice(-3000)}`);
  slow.push({ run: i + 1, caught: code === 1, band: /judged against the band of the last (\d+)/.exec(stderr)?.[1] ?? null, regressions: stderr.split("\n").filter((l) => l.startsWith("regression:")).length });
  process.stderr.write(`slow ${i + 1}/${SLOW}: exit ${code}\n`);
}

const p50s = aa.map((r) => r.results.all.histograms["cable.broadcast_latency"]?.p50).filter(Number.isFinite);
const recordBytes = readdirSync(history).map((f) => readFileSync(path.join(history, f)).length);
console.log(
  JSON.stringify(
    {
      date: new Date().toISOString().slice(0, 10),
      aa: AA,
      slow: SLOW,
      delayMs: DELAY,
      slowdown: SLOWDOWN,
      thresholdPercent: THRESHOLD,
      loadSeconds: Number(flags.seconds),
      aaBroadcastP50: { min: Math.min(...p50s), max: Math.max(...p50s) },
      // The CLI's own verdicts while the history grew (two-run below 8 runs, then bands of 8 to 19).
      cliAlarmsDuringAA: cliAlarms,
      leaveOneOut: {
        alarms: leaveOneOut.reduce((n, l) => n + (l.alarms.length > 0 ? 1 : 0), 0),
        runsChecked: leaveOneOut.length,
        figuresPerRun: leaveOneOut[0]?.judged,
        perFigureConfidence: leaveOneOut[0]?.confidence,
        largestScore: Math.max(...leaveOneOut.map((l) => l.maxScore)),
        flagged: leaveOneOut.filter((l) => l.alarms.length > 0),
      },
      slowdown: { caught: slow.filter((s) => s.caught).length, of: slow.length, runs: slow },
      recordBytes: { min: Math.min(...recordBytes), max: Math.max(...recordBytes) },
      minutes: Math.round((Date.now() - started) / 6_000) / 10,
    },
    null,
    2,
  ),
);
await target.close();
if (!flags.keep) rmSync(work, { recursive: true, force: true });
else process.stderr.write(`kept ${work}\n`);
