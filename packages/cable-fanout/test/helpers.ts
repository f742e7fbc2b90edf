import type { Progress, RegionCounts } from "../src/progress";

/** A clock that only moves when the code under test sleeps. */
export function fakeClock(start = 1_000_000) {
  let now = start;
  const sleeps: number[] = [];
  return {
    now: () => now,
    sleeps,
    advance: (ms: number) => (now += ms),
    sleep: async (ms: number) => {
      sleeps.push(ms);
      now += ms;
    },
  };
}

export class RecordingProgress implements Progress {
  readonly events: string[] = [];
  readonly updates: Array<[string, RegionCounts]> = [];
  update(region: string, counts: RegionCounts): void {
    this.updates.push([region, counts]);
  }
  event(line: string): void {
    this.events.push(line);
  }
  stop(): void {}
}

export const throttling = () => Object.assign(new Error("Rate exceeded"), { name: "ThrottlingException", $metadata: { httpStatusCode: 400 } });
