// Whole processes, as a user's machine pays for them (issue 55): one `artillery run` or `k6 run`
// from start to exit under /usr/bin/time (the kernel's user + system CPU of every thread, and the
// peak RSS), at two sizes of the same workload, so that start-up, the first minute's warming, the
// VUs' creation and end, the metrics' aggregation, the report and the exit are all counted, and
// the tool's fixed cost cancels in the difference. The window figures (workloads.mjs) answer "is
// the hot path lean"; these answer "how many machines does my test need".
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { exitWithin, sleep, spawnLogged } from "./proc.mjs";

const require = createRequire(import.meta.url);
const here = path.dirname(fileURLToPath(import.meta.url));
export const artilleryBin = path.join(path.dirname(require.resolve("artillery/package.json")), "bin", "run");
export const processor = path.join(here, "processor.cjs");

/**
 * Starts `argv` under /usr/bin/time; `done` resolves {cpuS, userS, sysS, maxRssKb, wallS} at its
 * exit, or rejects with the log's last lines when it fails, outlives `timeoutMs`, or time wrote
 * no figures. `child` is there for a harness that acts while it runs (broadcasts, waits).
 */
export function startTimed(argv, { dir, id, env = {}, timeoutMs, okCodes = [0] }) {
  const timing = path.join(dir, `${id}.time`);
  const logPath = path.join(dir, `${id}.log`);
  const child = spawnLogged(["/usr/bin/time", "-f", "%U %S %M %e", "-o", timing, ...argv], logPath, { env: { ...process.env, ...env } });
  const exited = new Promise((resolve) => child.once("exit", (code, signal) => resolve({ code, signal })));
  const tail = () => (existsSync(logPath) ? readFileSync(logPath, "utf8").trim().split("\n").slice(-5).join(" | ") : "");
  const done = (async () => {
    const outcome = await Promise.race([exited, sleep(timeoutMs).then(() => null)]);
    if (outcome === null) {
      child.kill("SIGKILL");
      await exitWithin(child, 5_000);
      throw new Error(`${id}: still running after ${timeoutMs / 1000} s; see ${logPath}`);
    }
    if (!okCodes.includes(outcome.code)) throw new Error(`${id}: exited ${outcome.code ?? outcome.signal}: ${tail()}`);
    // time(1) writes "Command exited with non-zero status N" first when the command failed.
    const line = existsSync(timing) ? readFileSync(timing, "utf8").trim().split("\n").at(-1) : "";
    const [userS, sysS, maxRssKb, wallS] = line.split(" ").map(Number);
    if (![userS, sysS, maxRssKb, wallS].every(Number.isFinite)) throw new Error(`${id}: /usr/bin/time wrote ${JSON.stringify(line)}; see ${logPath}`);
    return { cpuS: round(userS + sysS, 2), userS, sysS, maxRssKb, wallS, logPath };
  })();
  return { child, logPath, done };
}

/**
 * `artillery run` on a script (an object, written to a file here, or the path of a scenario file
 * run as users run it, `args` such as --overrides before it), timed whole; `done` resolves the
 * timing and the report's aggregate.
 */
export function startTimedArtillery(script, { dir, id, args = [], env = {}, timeoutMs }) {
  const reportPath = path.join(dir, `${id}.report.json`);
  let scriptPath = script;
  if (typeof script !== "string") {
    scriptPath = path.join(dir, `${id}.json`);
    writeFileSync(scriptPath, JSON.stringify(script));
  }
  const run = startTimed([process.execPath, artilleryBin, "run", "-o", reportPath, ...args, scriptPath], {
    dir,
    id,
    timeoutMs,
    // Artillery exits 1 when a user failed; the figures say so, the process still ran whole.
    okCodes: [0, 1],
    env: { ARTILLERY_DISABLE_TELEMETRY: "true", ...env },
  });
  const done = run.done.then((time) => {
    const { aggregate } = JSON.parse(readFileSync(reportPath, "utf8"));
    return { ...time, counters: aggregate.counters ?? {}, summaries: aggregate.summaries ?? {} };
  });
  return { ...run, done };
}

/** `k6 run` on a script's source, timed whole; `done` resolves the timing and the summary export's metrics. */
export function startTimedK6(bin, source, { dir, id, env = {}, timeoutMs, okCodes = [0, 99, 107] }) {
  const scriptPath = path.join(dir, `${id}.js`);
  const summaryPath = path.join(dir, `${id}.summary.json`);
  writeFileSync(scriptPath, source);
  const run = startTimed([bin, "run", "--quiet", "--no-color", "--no-usage-report", "--no-thresholds", "--summary-export", summaryPath, scriptPath], {
    dir,
    id,
    timeoutMs,
    // k6 exits 99 when a threshold fails and 107 on a script error mid-run; neither is a lost run here.
    okCodes,
    env: { K6_NO_USAGE_REPORT: "true", ...env },
  });
  // A k6 that panicked at its end (exit 2) wrote no summary; its timing is whole all the same.
  const done = run.done.then((time) => ({ ...time, metrics: existsSync(summaryPath) ? (JSON.parse(readFileSync(summaryPath, "utf8")).metrics ?? {}) : {}, summary: existsSync(summaryPath) }));
  return { ...run, done };
}

/** The difference per unit between a larger and a smaller whole run: (b − a) ÷ (units b − units a). */
export function marginal(small, large, units) {
  if (small.error || large.error) return null;
  const du = units(large) - units(small);
  if (!(du > 0)) return null;
  return { cpuPerUnitS: (large.cpuS - small.cpuS) / du, rssPerUnitKb: (large.maxRssKb - small.maxRssKb) / du, units: du };
}

export function round(v, digits = 3) {
  return v === undefined || v === null || Number.isNaN(v) ? null : Math.round(v * 10 ** digits) / 10 ** digits;
}
