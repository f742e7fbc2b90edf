// Whole processes, as a user's machine pays for them (issue 55): one `artillery run` or `k6 run`
// from start to exit under /usr/bin/time (the kernel's user + system CPU of every thread, and the
// peak RSS), at two sizes of the same workload, so that start-up, the first minute's warming, the
// VUs' creation and end, the metrics' aggregation, the report and the exit are all counted, and
// the tool's fixed cost cancels in the difference. The window figures (workloads.mjs) answer "is
// the hot path lean"; these answer "how many machines does my test need".
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { exitWithin, sleep, spawnLogged } from "./proc.mjs";
import { artilleryBin } from "./subjects.mjs";

const here = path.dirname(fileURLToPath(import.meta.url));

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

/**
 * The figures of three whole runs of one workload at 1, N/10 and N: per unit at scale (N/10 to
 * N: what each more user costs a warm process), per unit from one (1 to N: the process's first
 * users' warming counted in), and the warming itself: what the units from 1 to N/10 cost beyond
 * the scale rate (V8 compiling the hot paths, once a process). A failed run leaves its figures null.
 */
export function threeSizes(one, tenth, all, units) {
  const atScale = marginal(tenth, all, units);
  const fromOne = marginal(one, all, units);
  const warmingS = atScale && !one.error ? round(tenth.cpuS - one.cpuS - atScale.cpuPerUnitS * (units(tenth) - units(one)), 2) : null;
  return { atScale, fromOne, warmingS };
}

export function round(v, digits = 3) {
  return v === undefined || v === null || Number.isNaN(v) ? null : Math.round(v * 10 ** digits) / 10 ** digits;
}

/**
 * The quick mode's whole-process check: `n` users connect, subscribe, hold `holdS` and leave, one
 * whole process of `subject` ("engine": `artillery run`; "bare": bench/bare-client.mjs, the same
 * work without Artillery) on `target`. Resolves the timing and how many users subscribed.
 */
export async function wholeHold(target, subject, n, { holdS, ratePerSecond, dir, id }) {
  const rampS = Math.max(1, Math.ceil(n / ratePerSecond));
  const timeoutMs = (rampS + holdS + 60) * 1000;
  const base = await target.baseline();
  if (subject === "engine") {
    const script = {
      config: { target: target.cableUrl, engines: { cable: {} }, cable: { timeout: 30 }, phases: [{ arrivalCount: n, duration: rampS }] },
      scenarios: [{ engine: "cable", flow: [{ connect: {} }, { subscribe: { channel: "BenchmarkChannel", as: "s" } }, { think: holdS }] }],
    };
    const r = await startTimedArtillery(script, { dir, id, timeoutMs }).done;
    return { ...r, users: r.counters["vusers.completed"] ?? 0 };
  }
  // The bare client holds every user to one deadline: its start (well under a second), the ramp, the hold.
  const options = { mode: "listen", url: target.cableUrl, identifier: JSON.stringify({ channel: "BenchmarkChannel" }), n0: 0, n, ratePerSecond, deadline: Date.now() + (1 + rampS + holdS) * 1000 };
  const r = await startTimed([process.execPath, path.join(here, "..", "bare-client.mjs"), JSON.stringify(options)], { dir, id, timeoutMs }).done;
  const stats = JSON.parse(readFileSync(r.logPath, "utf8").trim().split("\n").at(-1));
  await target.waitFor((c) => c.connectionsOpen <= base.connectionsOpen, { deadline: Date.now() + 10_000 });
  return { ...r, users: stats.subscribed };
}
