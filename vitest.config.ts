import { defineConfig } from "vitest/config";

const FILES = ["packages/*/test/**/*.test.ts", "packages/*/src/**/*.test.ts", "infra/test/**/*.test.ts", "test/**/*.test.ts"];
const EXCLUDE = ["**/node_modules/**", "**/dist/**"];

// Files that judge time on this machine (arrival lateness, generator lag, saturation and starvation, latency
// thresholds, capacity verdicts, a run's length, an A/A pair through the regression gate): they run
// after the others, one at a time, with the machine to themselves, so another test's load never
// decides them.
const TIMED = [
  "packages/artillery-engine-cable/test/{arrivals,generator,lag,avalanche-waves,console-peak,reliability}.test.ts",
  "packages/cable-fanout/test/{capacity-cli,capacity-rate-cli,capacity-moto,capacity-server-metrics,over-time-cli,soak-cli,storm-cli,local-e2e,compare-cli,live-page,history-local,history-moto}.test.ts",
  "packages/cable-report/test/{demo-page,saturation,starved-runs,e2e,gate-runs}.test.ts",
  "packages/cable-local-target/test/{known-truth,fault-knobs}.test.ts",
  "packages/cable-worker/test/capacity-probe.test.ts",
  // Its pull-request job gates an A/A pair at 20% on a target in the test's own process.
  "packages/cable-action/test/{action,action-history}.test.ts",
];

export default defineConfig({
  test: {
    // Integration tests start real servers and the real Artillery CLI; the 2-core CI machine is slow.
    testTimeout: 60_000,
    hookTimeout: 120_000,
    pool: "forks",
    // Vitest's default on 2 cores is one fork: every file in a row. Most files wait on servers,
    // child processes and the disk, and share nothing (free ports, their own temp dirs), so two run
    // at once; the timed ones below get the machine alone.
    maxWorkers: 2,
    minWorkers: 1,
    projects: [
      { extends: true, test: { name: "shared", include: FILES, exclude: [...EXCLUDE, ...TIMED] } },
      { extends: true, test: { name: "timed", include: TIMED, exclude: EXCLUDE, sequence: { groupOrder: 1 }, poolOptions: { forks: { singleFork: true } } } },
    ],
  },
});
