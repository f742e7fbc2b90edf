// The stair as Artillery phases. Every task of a segment runs the same phases (one bundle for the
// whole run): for each level, a climb (`arrivalCount` of the task's share of the new users, at the
// stair's connect rate) and a hold (`pause`: no one arrives, everyone already there stays).
// By message rate, a level is one run of its own: the users climb, then hold while they send at
// the level's rate (config.variables capacity_users and capacity_rate, read by processors/capacity.js).
import { FanoutInputError } from "../errors.js";

/** What the stair steps: concurrent users (the default), or messages a second from a fixed number of users. */
export type Axis = "users" | "rate";

export interface StairOptions {
  start: number;
  step: number;
  max: number;
  /** Seconds each level is held and judged. */
  holdS: number;
  /** Seconds one step's users take to arrive; a climb of k steps takes k times as long. */
  climbS: number;
}

export interface PlannedStep {
  /** Total users at this level, over every task of every region. */
  level: number;
  /** Users each task adds in this step's climb. */
  perTask: number;
  climbIndex: number;
  holdIndex: number;
  climbS: number;
}

export interface SegmentPlan {
  steps: PlannedStep[];
  phases: Array<Record<string, unknown>>;
  /** Seconds from the first climb to the end of the last hold. */
  totalS: number;
  /** config.variables the segment's run needs (by rate: the users and the level's rate). */
  variables: Record<string, number>;
}

/** Artillery's metrics periods are 10 s long: a hold must contain at least one whole period. */
export const PERIOD_MS = 10_000;
export const MIN_HOLD_S = 20;

export function levels(options: Pick<StairOptions, "start" | "step" | "max">): number[] {
  const out: number[] = [];
  for (let level = options.start; level <= options.max && out.length < 10_000; level += options.step) out.push(level);
  return out;
}

/**
 * By users, every task adds the same share of each level. By rate (`users` given), the users split
 * evenly over the tasks; a rate needs no split (each user sends once every users/rate seconds).
 */
export function checkStair(options: StairOptions, tasks: number, users?: number): void {
  const { start, step, max, holdS, climbS } = options;
  if (start > max) throw new FanoutInputError(`--start ${start} is above --max ${max}`);
  if (holdS < MIN_HOLD_S) throw new FanoutInputError(`--hold ${holdS}: hold at least ${MIN_HOLD_S} s, so that each hold contains a whole 10 s metrics period of Artillery's`);
  if (climbS <= 0) throw new FanoutInputError(`--climb must be positive`);
  if (users !== undefined) {
    if (users % tasks !== 0) {
      throw new FanoutInputError(`--users ${users} does not split evenly over ${tasks} task(s) (regions × --count): every task holds the same share; use a multiple of ${tasks}`);
    }
    if (levels(options).length > 200) throw new FanoutInputError(`--start ${start} --step ${step} --max ${max} makes ${levels(options).length} levels; keep it under 200`);
    return;
  }
  for (const [flag, n] of [["--start", start], ["--step", step]] as const) {
    if (n % tasks !== 0) {
      throw new FanoutInputError(`${flag} ${n} does not split evenly over ${tasks} task(s) (regions × --count): every task adds the same share; use a multiple of ${tasks}`);
    }
  }
  if (levels(options).length > 200) throw new FanoutInputError(`--start ${start} --step ${step} --max ${max} makes ${levels(options).length} levels; keep it under 200 (a bigger --step, then --refine)`);
}

/**
 * --refine N: levels between two of the stair's, so finer than --step; by users on the grid of the
 * tasks' shares (a level every task adds the same users to).
 */
export function checkRefine(refine: number, options: Pick<StairOptions, "step">, tasks: number, byRate: boolean): void {
  if (refine >= options.step) throw new FanoutInputError(`--refine ${refine} is not finer than --step ${options.step}: give a resolution below the step, e.g. --refine ${Math.max(1, Math.floor(options.step / 4))}`);
  if (!byRate && refine % tasks !== 0) {
    throw new FanoutInputError(`--refine ${refine} does not split evenly over ${tasks} task(s) (regions × --count): every task adds the same share; use a multiple of ${tasks}`);
  }
}

/**
 * The phases of one segment of the stair: climbing from 0 straight to `stepLevels[0]` (at the
 * stair's rate, so a resumed or repeated level costs the time it would have on the stair), then
 * one step at a time. Names carry the level, so that logs and reports read as the stair.
 */
export function planSegment(stepLevels: number[], options: Pick<StairOptions, "step" | "holdS" | "climbS">, tasks: number): SegmentPlan {
  const steps: PlannedStep[] = [];
  const phases: Array<Record<string, unknown>> = [];
  let previous = 0;
  let totalS = 0;
  for (const level of stepLevels) {
    const added = level - previous;
    const climbS = Math.max(1, Math.round((options.climbS * added) / options.step));
    steps.push({ level, perTask: added / tasks, climbIndex: phases.length, holdIndex: phases.length + 1, climbS });
    phases.push({ name: `capacity ${level} climb`, duration: climbS, arrivalCount: added / tasks });
    phases.push({ name: `capacity ${level} hold`, pause: options.holdS });
    totalS += climbS + options.holdS;
    previous = level;
  }
  return { steps, phases, totalS, variables: {} };
}

/**
 * One level of a search by rate, as a run of its own: `users` arrive over one --climb (sending at
 * the level's rate as they come), then hold the level. A fresh run per level, as for a repeat, so
 * that a backlog the server built at one rate is never judged as part of the next; the send rate
 * is a config.variables value, fixed for a run. Phase names carry the rate, as the stair's carry
 * the users.
 */
export function planRateLevel(level: number, users: number, options: Pick<StairOptions, "holdS" | "climbS">, tasks: number): SegmentPlan {
  const climbS = Math.max(1, Math.round(options.climbS));
  return {
    steps: [{ level, perTask: users / tasks, climbIndex: 0, holdIndex: 1, climbS }],
    phases: [
      { name: `capacity ${level} msg/s climb`, duration: climbS, arrivalCount: users / tasks },
      { name: `capacity ${level} msg/s hold`, pause: options.holdS },
    ],
    totalS: climbS + options.holdS,
    variables: { capacity_users: users, capacity_rate: level },
  };
}
