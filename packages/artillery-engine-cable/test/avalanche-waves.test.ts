// processors/avalanche.js's gate (waitForWave … waveDone), through the real Artillery CLI against
// the local target: clients connect in waves of `wave` at once, each wave once the one before it is
// confirmed or failed, and a wave that never reports is released after `wave_timeout`.
// The target holds every confirmation back, so a wave's sockets open in one burst and the next burst
// cannot start before those confirmations: polling the target's count of opened sockets shows the waves.
import path from "node:path";
import { counter, runArtillery, samples, type ArtilleryRun } from "cable-test-servers";
import { startTarget, type FaultConfig, type LocalTarget } from "cable-local-target";
import { afterEach, expect, test } from "vitest";

const repo = path.resolve(__dirname, "../../..");
const CONFIRM_DELAY_MS = 600;

let target: LocalTarget | undefined;
afterEach(async () => {
  await target?.close();
  target = undefined;
});

/** Runs Artillery while polling the target's opened sockets; returns the run and the sizes of the bursts of opens. */
async function runPolled(faults: FaultConfig, run: (t: LocalTarget) => Promise<ArtilleryRun>, burstGapMs: number) {
  target = await startTarget({ port: 0, faults });
  const t = target;
  const opens: number[] = []; // the time of each socket opened, as seen by the poll
  let seen = 0;
  const poll = setInterval(() => {
    const opened = t.counters().connectionsOpened;
    for (; seen < opened; seen++) opens.push(performance.now());
  }, 5);
  const result = await run(t);
  clearInterval(poll);
  const bursts: number[] = [];
  const gaps: number[] = [];
  opens.forEach((at, i) => {
    const gap = i === 0 ? Infinity : at - opens[i - 1];
    if (gap >= burstGapMs) {
      if (i > 0) gaps.push(gap);
      bursts.push(0);
    }
    bursts[bursts.length - 1]++;
  });
  return { run: result, bursts, gaps };
}

function avalanche(t: LocalTarget, users: number, variables: Record<string, number>) {
  return runArtillery({
    script: path.join(repo, "scenarios", "avalanche.yml"),
    args: [
      "--target",
      t.cableUrl,
      "--overrides",
      JSON.stringify({ config: { cable: { timeout: 5 }, phases: [{ name: "step 1", duration: 1, arrivalCount: users }] } }),
      "-v",
      JSON.stringify({ hold: 1, ...variables }),
    ],
  });
}

test("150 clients, wave 50: three bursts of 50 opens, each after the wave before it was confirmed", async () => {
  const { run, bursts, gaps } = await runPolled({ confirmDelayMs: CONFIRM_DELAY_MS }, (t) => avalanche(t, 150, { wave: 50 }), 300);
  expect(run.code, run.output).toBe(0);
  const r = run.report!;
  expect(counter(r, "vusers.completed"), run.output).toBe(150);
  // All 150 arrive within 1 s; without the gate they would open one after another, ~7 ms apart.
  expect(bursts).toEqual([50, 50, 50]);
  // The next wave opens only once the last confirmation of the one before it is in.
  for (const gap of gaps) expect(gap).toBeGreaterThanOrEqual(CONFIRM_DELAY_MS - 100);
  expect(counter(r, "avalanche.waves")).toBe(3);
  expect(counter(r, "avalanche.wave_timeouts")).toBe(0);
  expect(samples(r, "avalanche.wave_duration")).toBe(3);
  expect(r.aggregate.summaries["avalanche.wave_duration"].min).toBeGreaterThanOrEqual(CONFIRM_DELAY_MS - 5);
  expect(samples(r, "avalanche.step_1.connect_to_confirm")).toBe(150);
  expect(samples(r, "cable.connect_to_confirm")).toBe(150);
});

test("failed clients count as finished: rejected subscriptions, 140 clients in waves of 50, 50 and 40", async () => {
  // wave_timeout 30: were failures not counted, each wave would wait 30 s for the one before it.
  const { run, bursts } = await runPolled({ rejectSubscriptions: true }, (t) => avalanche(t, 140, { wave: 50, wave_timeout: 30 }), 100);
  // Every client fails on purpose: over config.cable.maxFailedUsers (default 0), the run exits 1 and says why.
  expect(run.code, run.output).toBe(1);
  expect(run.output).toMatch(/cable: 1 virtual user failed, more than config\.cable\.maxFailedUsers \(0\): artillery run will exit 1\./);
  const r = run.report!;
  expect(counter(r, "vusers.failed")).toBe(140);
  expect(counter(r, "errors.cable.subscription_rejected")).toBe(140);
  expect(counter(r, "avalanche.waves")).toBe(3);
  expect(counter(r, "avalanche.wave_timeouts")).toBe(0);
  expect(samples(r, "avalanche.wave_duration")).toBe(3);
  // The last wave is partial: it closes once no client has arrived for wave_idle (0.5 s).
  expect(bursts).toEqual([50, 50, 40]);
  expect(run.durationMs).toBeLessThan(20_000);
});

test("a wave that never reports is let go after wave_timeout", async () => {
  // No waveDone in the flow: every wave but the first goes on wave_timeout (1 s).
  const { run, bursts, gaps } = await runPolled(
    {},
    (t) =>
      runArtillery({
        script: {
          config: {
            target: t.cableUrl,
            processor: path.join(repo, "processors", "avalanche.js"),
            engines: { cable: {} },
            cable: { timeout: 5 },
            variables: { wave: 10, wave_timeout: 1 },
            phases: [{ duration: 1, arrivalCount: 30 }],
          },
          scenarios: [
            {
              name: "silent",
              engine: "cable",
              flow: [{ function: "waitForWave" }, { connect: { cookies: { uid: "Wave/{{ $uuid }}" } } }, { subscribe: { channel: "BenchmarkChannel" } }],
            },
          ],
        },
      }),
    500,
  );
  expect(run.code, run.output).toBe(0);
  const r = run.report!;
  expect(counter(r, "vusers.completed"), run.output).toBe(30);
  expect(counter(r, "avalanche.waves")).toBe(3);
  expect(counter(r, "avalanche.wave_timeouts")).toBe(2);
  expect(samples(r, "avalanche.wave_duration")).toBe(0);
  expect(bursts).toEqual([10, 10, 10]);
  for (const gap of gaps) expect(gap).toBeGreaterThanOrEqual(900);
});
