// Reading another process's CPU and memory from Linux /proc, and spawning bounded child processes.
// The load generator is measured from outside, the same way for every subject, so that no subject
// measures itself more kindly than another.
import { spawn } from "node:child_process";
import { createWriteStream, readdirSync, readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";

const CLOCK_TICKS_PER_SECOND = 100; // getconf CLK_TCK on Linux x86-64

/**
 * User + system CPU seconds of the whole process: /proc/<pid>/stat sums every thread, including
 * Artillery's worker threads (and threads that have already exited).
 */
export function cpuSeconds(pid) {
  let stat;
  try {
    stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  } catch (err) {
    // A subject that ended (or crashed) mid-measurement: say so, not ENOENT.
    if (err.code === "ENOENT") throw new Error(`process ${pid} exited before it was measured`);
    throw err;
  }
  // The command name is in parentheses and may contain spaces: fields are counted after ") ".
  const fields = stat.slice(stat.lastIndexOf(") ") + 2).split(" ");
  return (Number(fields[11]) + Number(fields[12])) / CLOCK_TICKS_PER_SECOND;
}

/** The VmRSS (current) and VmHWM (peak) of a process, in bytes. */
export function memory(pid) {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  const kb = (name) => {
    const m = new RegExp(`^${name}:\\s+(\\d+) kB`, "m").exec(status);
    if (!m) throw new Error(`/proc/${pid}/status has no ${name}`);
    return Number(m[1]) * 1024;
  };
  return { rss: kb("VmRSS"), peak: kb("VmHWM") };
}

export const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/** What the measured processes preload: a full GC in every thread on SIGUSR2 (gc-on-signal.cjs). */
export const GC_NODE_OPTIONS = `--expose-gc --require ${fileURLToPath(new URL("./gc-on-signal.cjs", import.meta.url))}`;

/**
 * RSS with live memory only: asks the process for a full GC in every thread (it must preload
 * GC_NODE_OPTIONS), lets it finish, then takes the median of a few samples `intervalMs` apart.
 */
export async function steadyRss(pid, samples = 5, intervalMs = 200) {
  process.kill(pid, "SIGUSR2");
  await sleep(500);
  const values = [];
  for (let i = 0; i < samples; i++) {
    if (i > 0) await sleep(intervalMs);
    values.push(memory(pid).rss);
  }
  values.sort((a, b) => a - b);
  return values[values.length >> 1];
}

/**
 * Waits until the process stops using CPU: `quietPolls` polls in a row, `pollMs` apart, without a
 * new clock tick. Returns the CPU seconds at the last tick (the end of the busy period), so the
 * quiet polls themselves are not counted. Gives up at `deadline` (epoch ms) and says so.
 */
export async function waitCpuSettled(pid, { pollMs = 50, quietPolls = 4, deadline }) {
  let last = cpuSeconds(pid);
  let quiet = 0;
  while (quiet < quietPolls) {
    if (Date.now() > deadline) return { cpu: last, settled: false };
    await sleep(pollMs);
    const now = cpuSeconds(pid);
    if (now === last) quiet++;
    else {
      quiet = 0;
      last = now;
    }
  }
  return { cpu: last, settled: true };
}

/**
 * Runs `argv` under bash with the open-file limit raised as far as the hard limit allows (the hard
 * limit here is 20,000 and cannot be raised, even as root). `exec` keeps the pid: the pid we
 * measure is the program's, not the shell's.
 */
export function spawnWithFileLimit(argv, { cpus, ...options } = {}) {
  // `cpus` (taskset's list, e.g. "1") pins the process and all its threads to those cores.
  if (cpus !== undefined) argv = ["taskset", "-c", String(cpus), ...argv];
  const quoted = argv.map((a) => `'${String(a).replaceAll("'", `'\\''`)}'`).join(" ");
  const script = `ulimit -n "$(ulimit -Hn)" 2>/dev/null; exec ${quoted}`;
  return spawn("bash", ["-c", script], options);
}

/** spawnWithFileLimit with the process's stdout and stderr both written to `logPath`. */
export function spawnLogged(argv, logPath, options) {
  const child = spawnWithFileLimit(argv, { ...options, stdio: ["ignore", "pipe", "pipe"] });
  const log = createWriteStream(logPath);
  child.stdout.pipe(log);
  child.stderr.pipe(log);
  return child;
}

/** Resolves with the exit code, or kills the process (by its own pid) after `ms` and resolves null. */
export function exitWithin(child, ms) {
  return new Promise((resolve) => {
    if (child.exitCode !== null) return resolve(child.exitCode);
    const timer = setTimeout(() => {
      child.kill("SIGKILL");
      resolve(null);
    }, ms);
    child.once("exit", (code) => {
      clearTimeout(timer);
      resolve(code);
    });
  });
}

/**
 * CPU seconds per thread (/proc/<pid>/task/<tid>): the main thread (tid = pid), Artillery's worker
 * threads, V8's helpers (GC, compiler; Node names them all "node"), libuv's pool.
 */
export function cpuByThread(pid) {
  const threads = {};
  for (const tid of readdirSync(`/proc/${pid}/task`)) {
    try {
      const name = readFileSync(`/proc/${pid}/task/${tid}/comm`, "utf8").trim();
      const stat = readFileSync(`/proc/${pid}/task/${tid}/stat`, "utf8");
      const fields = stat.slice(stat.lastIndexOf(") ") + 2).split(" ");
      threads[tid] = { name: tid === String(pid) ? "main" : name, user: Number(fields[11]) / CLOCK_TICKS_PER_SECOND, sys: Number(fields[12]) / CLOCK_TICKS_PER_SECOND };
    } catch {
      // the thread ended between the listing and the read
    }
  }
  return threads;
}

/** The CPU each thread used between two cpuByThread() readings, busiest first; idle threads left out. */
export function cpuByThreadSince(before, after) {
  return Object.entries(after)
    .map(([tid, a]) => {
      const b = before[tid] ?? { user: 0, sys: 0 };
      return { tid: Number(tid), name: a.name, user: Math.round((a.user - b.user) * 100) / 100, sys: Math.round((a.sys - b.sys) * 100) / 100 };
    })
    .filter((t) => t.user + t.sys > 0)
    .sort((x, y) => y.user + y.sys - (x.user + x.sys));
}
