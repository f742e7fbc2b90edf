// A diagnostic for bench/profile.mjs, never used for the goals: Artillery's arrival timer (the
// `arrivals` package on `nanotimer`) spins on setImmediate for the last 25 ms before every
// arrival, which keeps a core busy during any phase of more than ~20 arrivals/s and fills the CPU
// figures with idle spinning. Preloaded (NODE_OPTIONS=--require), this replaces that interval
// with a plain setInterval that fires the arrivals that are due, so that the CPU left is the VUs'.
const path = require("node:path");

function loadNanotimer() {
  try {
    const artillery = path.dirname(require.resolve("artillery/package.json", { paths: [process.cwd(), __dirname] }));
    const arrivals = path.dirname(require.resolve("arrivals/package.json", { paths: [artillery] }));
    return require(require.resolve("nanotimer", { paths: [arrivals] }));
  } catch {
    return undefined;
  }
}

const Nanotimer = loadNanotimer();
const MICROS_PER_UNIT = { s: 1e6, m: 1e3, u: 1, n: 1e-3 };

if (Nanotimer) {
  Nanotimer.prototype.setInterval = function setInterval(task, args, interval) {
    const micros = Number(interval.slice(0, -1)) * MICROS_PER_UNIT[interval.at(-1)];
    const startedAt = performance.now();
    let fired = 0;
    this.benchInterval = globalThis.setInterval(() => {
      const due = Math.floor(((performance.now() - startedAt) * 1000) / micros);
      // The task may clear the interval (the phase's last arrival): stop firing then.
      while (fired < due && this.benchInterval) {
        fired++;
        task(args);
      }
    }, Math.max(1, micros / 1000));
  };
  Nanotimer.prototype.clearInterval = function clearInterval() {
    globalThis.clearInterval(this.benchInterval);
    this.benchInterval = undefined;
  };
}
