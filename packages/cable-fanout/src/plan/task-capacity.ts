// What one load-generator task holds, by workload and Fargate size: measured with
// `node bench/task-size.mjs` (docs/benchmarks.md, "What one task holds, at 1, 2 and 4 vCPU
// (issue 40)"), read by `cable-fanout plan` to suggest how many tasks a test needs.
//
// The listen figures were measured on a 2-core machine shared with other work (read them as lower
// bounds); the chat ones again once it was quiet (other work 0–0.01 of a core in every run), which
// left 1 core where it was (850) and raised 2 cores from 1,603 to 2,419. Re-measure with the
// command below and replace the entries; the test checks the table's consistency, not its figures.

export type Workload = "listen" | "chat";

export interface TaskCapacity {
  workload: Workload;
  vcpu: 1 | 2 | 4;
  /** The Fargate memory (MiB) the figure assumes. */
  memoryMiB: number;
  /** Users one task of that size holds by the criterion below. */
  users: number;
  basis: "measured" | "extrapolated";
  /** Memory per user measured (KiB), for smaller sizes. */
  kibPerUser: number;
}

export const TASK_CAPACITY: {
  measuredOn: string;
  machine: string;
  criterion: string;
  command: string;
  doc: string;
  workloads: Record<Workload, string>;
  entries: readonly TaskCapacity[];
} = {
  measuredOn: "2026-11-27",
  machine: "2 cores (AMD EPYC), 24 GiB, Node 22.23.3, Artillery 2.0.34, one worker thread; listen on a machine shared with other work (lower bounds), chat on a quiet one",
  criterion: "the generator's cable.event_loop_lag p99 under 50 ms, no errors, peak RSS under 80 % of the task's memory",
  command: "node bench/task-size.mjs",
  doc: 'docs/benchmarks.md, "What one task holds, at 1, 2 and 4 vCPU (issue 40)"',
  workloads: {
    listen: "users connect, subscribe to one stream and listen; one broadcast to all of them every 5 s (and the server's pings); arrivals at 250/s",
    chat: "seed 004's RelayBox user: a private room of 100, 10 stamped publishes 2 s apart through the HTTP API, 20 s listening, leave (users = the most at once)",
  },
  entries: [
    { workload: "listen", vcpu: 1, memoryMiB: 2048, users: 2_000, basis: "measured", kibPerUser: 26.3 },
    { workload: "listen", vcpu: 2, memoryMiB: 4096, users: 2_000, basis: "measured", kibPerUser: 26.3 },
    { workload: "listen", vcpu: 4, memoryMiB: 8192, users: 4_000, basis: "extrapolated", kibPerUser: 26.3 },
    // Re-measured on the quiet machine (other work 0–0.01 of a core), 16:05–16:20 UTC.
    { workload: "chat", vcpu: 1, memoryMiB: 2048, users: 850, basis: "measured", kibPerUser: 39.9 },
    { workload: "chat", vcpu: 2, memoryMiB: 4096, users: 2_419, basis: "measured", kibPerUser: 39.9 },
    { workload: "chat", vcpu: 4, memoryMiB: 8192, users: 4_838, basis: "extrapolated", kibPerUser: 39.9 },
  ],
};

/** The entry for a workload and a size, or undefined. */
export function taskCapacity(workload: Workload, vcpu: number): TaskCapacity | undefined {
  return TASK_CAPACITY.entries.find((e) => e.workload === workload && e.vcpu === vcpu);
}

/** A rate one task of a size holds: broadcast frames received, or users taken in, a second. */
export interface RateCapacity {
  vcpu: 1 | 2 | 4;
  memoryMiB: number;
  perSecond: number;
  basis: "measured" | "extrapolated";
}

/** A rate's table: what was measured, how, and its entries by size. */
export interface RateTable {
  measuredOn: string;
  workload: string;
  command: string;
  entries: readonly RateCapacity[];
}

// Frames: scenarios/cable-broadcast.yml's users (a fifth send `broadcast` on one stream every socket
// hears, the rest listen) against the local target, the senders' pace moved until the generator's
// lag breaks the criterion above; frames = what the users received a second. Measured with
// `node bench/task-size.mjs --workload broadcast` on the quiet machine
// (bench/results/task-size-broadcast-2026-11-29.json; docs/benchmarks.md, "What one task
// receives, takes in and publishes (issue 54)"). 2 vCPU is a lower bound: the local target,
// fanning out 50,000 frames a second, shares this machine's second core with Artillery's main thread.
export const FRAME_CAPACITY: RateTable = {
  measuredOn: "2026-11-29",
  workload: "200 users on one stream, a fifth of them sending `broadcast` (each received by all 200), for 40 s; frames = the broadcasts the users received a second",
  command: "node bench/task-size.mjs --workload broadcast",
  entries: [
    // Held 32,745 a second (lag p99 34.1 ms); 50,433 did not (67.4 ms).
    { vcpu: 1, memoryMiB: 2048, perSecond: 32_745, basis: "measured" },
    // Held 50,313 (24.3 ms); asked for 60,000, the target delivered 48,903 (10.1 ms): the target's limit here, not the generator's.
    { vcpu: 2, memoryMiB: 4096, perSecond: 50_313, basis: "measured" },
    { vcpu: 4, memoryMiB: 8192, perSecond: 100_626, basis: "extrapolated" },
  ],
};

// Arrivals: users connect, subscribe to one stream, stay 2 s and leave, at a sustained rate the
// search moves: what a churning flow pays for over and over. Measured with
// `node bench/task-size.mjs --workload arrivals` on the quiet machine
// (bench/results/task-size-arrivals-2026-11-29.json).
export const ARRIVAL_CAPACITY: RateTable = {
  measuredOn: "2026-11-29",
  workload: "users connect, subscribe to one stream, stay 2 s and leave, at a sustained rate for 40 s",
  command: "node bench/task-size.mjs --workload arrivals",
  entries: [
    // Held 250 a second (lag p99 48.9 ms); 300 did not (64.7 ms).
    { vcpu: 1, memoryMiB: 2048, perSecond: 250, basis: "measured" },
    // Held 400 (40.9 ms), the largest step tried: a lower bound.
    { vcpu: 2, memoryMiB: 4096, perSecond: 400, basis: "measured" },
    { vcpu: 4, memoryMiB: 8192, perSecond: 800, basis: "extrapolated" },
  ],
};

/** The entry of a rate's table for `vcpu`, or undefined without a figure. */
export function rateHeld(table: RateTable, vcpu: number): RateCapacity | undefined {
  return table.entries.find((e) => e.vcpu === vcpu);
}

/**
 * HTTP publishes a second one task makes (the Pusher API, AnyCable's broadcast endpoint), derived
 * from the chat measurement above, whose users publish 10 times over their 40 s: 0.25 a second
 * each. That run's users also connected, subscribed and received, so these are lower bounds on
 * what publishing alone takes (each publish is an HTTP request: about 2–5 ms of CPU, docs/
 * benchmarks.md, "Signing in").
 */
export function publishesHeld(vcpu: number): { publishesPerSecond: number; basis: string } | undefined {
  const chat = taskCapacity("chat", vcpu);
  return chat ? { publishesPerSecond: (chat.users * 10) / 40, basis: `${chat.basis}: the chat figure's ${chat.users} users × 0.25 a second` } : undefined;
}
