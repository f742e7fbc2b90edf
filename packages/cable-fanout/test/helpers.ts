import { expect } from "vitest";
import { FanoutInputError } from "../src/errors";
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

/** The flag's message, word for word, as a FanoutInputError (exit 2): the same words the CLI has always printed. */
export function inputError(parse: () => unknown): string {
  try {
    parse();
  } catch (err) {
    expect(err).toBeInstanceOf(FanoutInputError);
    return (err as Error).message;
  }
  throw new Error("no error");
}

/** Commander's object for `run --local --regions local`: its defaults included. */
export const RUN = { out: "results", local: true, regions: "local", count: "1" };
