// What the user sees while a run waits: per region, tasks pending / running / stopped, and the time
// since the common start against the phases' duration. A live spinner on a terminal; on anything
// else (CI logs) one plain line per change.
import type { Ora } from "ora" with { "resolution-mode": "import" };

export interface RegionCounts {
  pending: number;
  running: number;
  stopped: number;
  /** Of the stopped, how many failed. */
  failed: number;
}

export interface Progress {
  update(region: string, counts: RegionCounts): void;
  /** A line that must stay in the log (a failure, a retry). */
  event(line: string): void;
  stop(): void;
}

export interface Clock {
  now: () => number;
  /** The common start, once the ready barrier has set it. */
  startAt: () => number | undefined;
  expectedMs: number | undefined;
}

export function formatDuration(ms: number): string {
  const s = Math.max(0, Math.round(ms / 1000));
  return `${Math.floor(s / 60)}:${String(s % 60).padStart(2, "0")}`;
}

/** "waiting for ready tasks" before the go, "starts in 0:08" before the common start, "1:02 / 2:00" after it. */
export function formatClock(clock: Clock): string {
  const startAt = clock.startAt();
  if (startAt === undefined) return "waiting for the tasks to be ready";
  const elapsed = clock.now() - startAt;
  if (elapsed < 0) return `load starts in ${formatDuration(-elapsed)}`;
  return clock.expectedMs === undefined ? `${formatDuration(elapsed)} elapsed` : `${formatDuration(elapsed)} / ${formatDuration(clock.expectedMs)}`;
}

export function formatCounts(region: string, c: RegionCounts): string {
  return `${region}: ${c.pending} pending, ${c.running} running, ${c.stopped} stopped${c.failed > 0 ? ` (${c.failed} failed)` : ""}`;
}

/** One line per change of a region's counts, for logs. */
export class LineProgress implements Progress {
  private readonly last = new Map<string, string>();

  constructor(
    private readonly write: (line: string) => void,
    private readonly clock: Clock,
  ) {}

  update(region: string, counts: RegionCounts): void {
    const line = formatCounts(region, counts);
    if (this.last.get(region) === line) return;
    this.last.set(region, line);
    this.write(`[${formatClock(this.clock)}] ${line}`);
  }

  event(line: string): void {
    this.write(line);
  }

  stop(): void {}
}

/** A spinner whose text is a table of the regions, redrawn in place. */
export class TerminalProgress implements Progress {
  private readonly regions = new Map<string, RegionCounts>();
  private readonly timer: NodeJS.Timeout;

  private constructor(
    private readonly spinner: Ora,
    private readonly clock: Clock,
  ) {
    this.timer = setInterval(() => this.render(), 1_000);
  }

  /** ora is an ES module; this package is CommonJS. */
  static async start(stream: NodeJS.WriteStream, clock: Clock): Promise<TerminalProgress> {
    const { default: ora } = await import("ora");
    return new TerminalProgress(ora({ stream, text: "starting tasks" }).start(), clock);
  }

  update(region: string, counts: RegionCounts): void {
    this.regions.set(region, counts);
    this.render();
  }

  event(line: string): void {
    // Printed above the spinner, which keeps drawing below.
    this.spinner.clear();
    this.spinner.stopAndPersist({ symbol: "•", text: line });
    this.spinner.start();
    this.render();
  }

  stop(): void {
    clearInterval(this.timer);
    this.render();
    this.spinner.stopAndPersist({ symbol: "■" });
  }

  private render(): void {
    const lines = [...this.regions].map(([region, counts]) => `  ${formatCounts(region, counts)}`);
    this.spinner.text = [formatClock(this.clock), ...lines].join("\n");
  }
}
