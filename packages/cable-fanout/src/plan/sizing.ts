// How many tasks a run needs, from what one task must carry on each measured dimension: the users
// at once (the listen or chat measurement), the broadcast frames it receives a second (the
// broadcast measurement), the users it takes in a second (the arrivals measurement) and the HTTP
// publishes it makes a second (from the chat measurement). Each dimension's share is demand ÷ what
// one task holds. Frames, arrivals and publishes each measured a task's worth of work on their
// own, so where a flow has several their shares add ("work"); the largest share binds. Every dimension falls as 1/count when the same users are spread over more tasks
// (frames too: a task's frames are all tasks' sends × its own subscribers, and both shrink with
// count), so the count that brings the binding share to 1 is ⌈count × share⌉.
import { framesPerTask } from "./audience.js";
import { ARRIVAL_CAPACITY, FRAME_CAPACITY, publishesHeld, rateHeld, taskCapacity, type Workload } from "./task-capacity.js";
import type { UsersEstimate } from "./users.js";

/** Memory a task's users may fill before the size is judged too small (the rest is Node, Artillery, the kernel's buffers). */
const MEMORY_HEADROOM = 0.8;

/** The Fargate sizes the plan weighs: each vCPU count with the least memory it allows. */
export const SIZES = [
  { cpu: 1024, memoryMiB: 2048 },
  { cpu: 2048, memoryMiB: 4096 },
  { cpu: 4096, memoryMiB: 8192 },
] as const;

export type Dimension = "users" | "frames" | "arrivals" | "publishes" | "work";

export interface DimensionShare {
  dimension: Dimension;
  /** What one task must carry: users at once, frames received a second, users taken in a second; for work, the sum of the two shares in %. */
  demand: number;
  /** What one task of the size holds. */
  holds: number;
  share: number;
  /** For work: the dimensions added. */
  parts?: Dimension[];
}

/** What one task of `cpu`/`memoryMiB` holds of `workload`: the measured figure at its vCPU, bounded by its memory. */
export function holdsPerTask(workload: Workload, cpu: number, memoryMiB: number): number | undefined {
  const entry = taskCapacity(workload, cpu / 1024);
  if (!entry) return undefined;
  const byMemory = Math.floor((memoryMiB * 1024 * MEMORY_HEADROOM) / entry.kibPerUser);
  return Math.min(entry.users, byMemory);
}

/** Broadcast frames a task receives a second at this run's count and regions (every task hears every task's sends). */
export function taskFrames(users: UsersEstimate, tasksInAll: number): number {
  return framesPerTask(users.audiences, users.echoesPerUserSecond, users.peak, tasksInAll);
}

/** Each measured dimension's share of one task of this size, the largest first; empty without a figure at this size. */
export function shares(users: UsersEstimate, tasksInAll: number, cpu: number, memoryMiB: number): DimensionShare[] {
  const out: DimensionShare[] = [];
  const holds = holdsPerTask(users.workload, cpu, memoryMiB);
  if (holds !== undefined) out.push({ dimension: "users", demand: users.peak, holds, share: users.peak / holds });
  const frames = taskFrames(users, tasksInAll);
  const held = rateHeld(FRAME_CAPACITY, cpu / 1024);
  const frameShare = frames > 0 && held ? { dimension: "frames" as const, demand: frames, holds: held.perSecond, share: frames / held.perSecond } : undefined;
  const taken = rateHeld(ARRIVAL_CAPACITY, cpu / 1024);
  const arrivals = users.peakArrivalsPerSecond;
  const arrivalShare = arrivals > 0 && taken ? { dimension: "arrivals" as const, demand: arrivals, holds: taken.perSecond, share: arrivals / taken.perSecond } : undefined;
  const publishes = users.publishesPerUserSecond * users.peak;
  const posted = publishesHeld(cpu / 1024);
  const publishShare = publishes > 0 && posted ? { dimension: "publishes" as const, demand: publishes, holds: posted.publishesPerSecond, share: publishes / posted.publishesPerSecond } : undefined;
  const parts: DimensionShare[] = [];
  for (const d of [frameShare, arrivalShare, publishShare]) if (d) parts.push(d);
  out.push(...parts);
  // Together: the CPU each measured alone, added (at the same peak: an upper bound where one's peak comes before another's).
  if (parts.length > 1) {
    const share = parts.reduce((n, d) => n + d.share, 0);
    out.push({ dimension: "work", demand: share * 100, holds: 100, share, parts: parts.map((d) => d.dimension) });
  }
  return out.sort((a, b) => b.share - a.share);
}

/** Tasks per region that keep every dimension within one task of this size, for the users `count` tasks per region carry now. */
export function countHolding(count: number, binding: DimensionShare): number {
  // A hair under 1 is 1: the shares are rates, and 1.0000001 must not ask for another task.
  return Math.max(1, Math.ceil(count * binding.share - 1e-9));
}
