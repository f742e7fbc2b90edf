// Every deadline of a run from planTiming, as a table: the backend's defaults, the flags over them,
// and what follows (the default --max-duration, the beat, what each task is told).
import { describe, expect, it } from "vitest";
import { AWS_TIMING } from "../src/aws/aws-backend";
import { planTiming, type TimingFlags } from "../src/run/timing";

const s = 1_000;
const min = 60 * s;

describe("planTiming", () => {
  const cases: Array<{ name: string; flags: TimingFlags; phasesMs: number | undefined; want: { maxDurationMs: number; beatEveryMs: number; goWaitMs: number; stalePollMs: number; staleMs: number; startDelayMs: number } }> = [
    // 600 s ready + 10 s lead + 5 min of phases + 600 s margin.
    { name: "AWS defaults, a 5-minute scenario", flags: {}, phasesMs: 5 * min, want: { maxDurationMs: 1_510 * s, beatEveryMs: 15 * s, goWaitMs: 670 * s, stalePollMs: 15 * s, staleMs: 90 * s, startDelayMs: 10 * s } },
    { name: "phases of unknown length count as an hour", flags: {}, phasesMs: undefined, want: { maxDurationMs: 4_810 * s, beatEveryMs: 15 * s, goWaitMs: 670 * s, stalePollMs: 15 * s, staleMs: 90 * s, startDelayMs: 10 * s } },
    { name: "--max-duration is taken as given", flags: { maxDurationMs: 20 * min }, phasesMs: 5 * min, want: { maxDurationMs: 20 * min, beatEveryMs: 15 * s, goWaitMs: 670 * s, stalePollMs: 15 * s, staleMs: 90 * s, startDelayMs: 10 * s } },
    // Four beats per stale time, a task looks six times per stale time.
    { name: "a short --heartbeat-timeout beats and looks more often", flags: { heartbeatTimeoutMs: 20 * s }, phasesMs: 5 * min, want: { maxDurationMs: 1_510 * s, beatEveryMs: 5 * s, goWaitMs: 670 * s, stalePollMs: 3_333, staleMs: 20 * s, startDelayMs: 10 * s } },
    { name: "the beat and the look have floors", flags: { heartbeatTimeoutMs: 200 }, phasesMs: 5 * min, want: { maxDurationMs: 1_510 * s, beatEveryMs: 100, goWaitMs: 670 * s, stalePollMs: 250, staleMs: 200, startDelayMs: 10 * s } },
    { name: "--ready-timeout and --start-delay move the go wait and the default --max-duration", flags: { readyTimeoutMs: 2 * min, startDelayMs: 30 * s }, phasesMs: 5 * min, want: { maxDurationMs: 1_050 * s, beatEveryMs: 15 * s, goWaitMs: 210 * s, stalePollMs: 15 * s, staleMs: 90 * s, startDelayMs: 30 * s } },
  ];
  for (const { name, flags, phasesMs, want } of cases) {
    it(name, () => {
      const t = planTiming(AWS_TIMING, flags, phasesMs);
      expect({ maxDurationMs: t.maxDurationMs, beatEveryMs: t.beatEveryMs, goWaitMs: t.task.barrier.waitMs, stalePollMs: t.task.heartbeat.pollMs, staleMs: t.task.heartbeat.staleMs, startDelayMs: t.startDelayMs }).toEqual(want);
      expect(t.task.maxDurationMs).toBe(t.maxDurationMs);
      expect(t.task.barrier.pollMs).toBe(AWS_TIMING.goPollMs);
      expect(t.readyPollMs).toBe(2 * AWS_TIMING.goPollMs);
    });
  }

  it("leaves the backend's defaults where no flag is given, and --start-timeout over its own", () => {
    expect(planTiming(AWS_TIMING, { startTimeoutMs: 5 * min }, 0)).toMatchObject({ ...AWS_TIMING, startTimeoutMs: 5 * min });
  });
});
