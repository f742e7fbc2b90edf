// The run's live page (--live): the live feed's merged periods drawn by report.html's own page code
// (cable-report's liveResults and LivePageServer), served on loopback behind a random token while
// the run goes, then the final report.html itself.
//
// After each poll of the feed: the figures are merged and sent again only when some task's file came
// in (a few ms per region even for a long run: one task per region, its periods already merged);
// the line of where the run is (its clock, each region's tasks, the cost so far) goes every poll,
// on its own, a few hundred bytes.
import {
  inline,
  LivePageServer,
  liveResults,
  markdownToHtml,
  readMaxFailedUsers,
  reportPageParts,
  type LiveRegion,
  type LiveTransfer,
  type MergedResults,
  type ServerSeries,
} from "artillery-plugin-cable-report";
import type { RegionCounts } from "../progress.js";
import { formatDuration } from "../progress.js";
import type { LiveSnapshot, RegionLive } from "./region-live.js";

/** Where the live page listens: port 0 takes any free port; host is 127.0.0.1 unless --live-host. */
export interface LivePageAddress {
  port: number;
  host: string;
}

export const DEFAULT_LIVE_HOST = "127.0.0.1";

/** What of the run the page's status line and figures need, besides the feed. */
export interface LiveRunFacts {
  /** The scenario's file name, the page's title. */
  title: string;
  config: Record<string, unknown>;
  scenarios: unknown[];
  /** The scenario's planned duration. */
  plannedMs: number | undefined;
  /** The common start, once the barrier let the run go. */
  startAt: () => number | null | undefined;
  /** Tasks each region runs. */
  expected: (region: string) => number;
  /** The plan's estimate, when the run has one (AWS). */
  estimate?: { usd: number; taskSeconds: number };
  aborted: () => { condition: string; at: number; figure: string } | undefined;
  /** The server's scrapes so far (--server-metrics). */
  server?: () => ServerSeries | null;
}

export class LivePage {
  private readonly counts = new Map<string, RegionCounts>();
  private signature = "";
  /** Drawing failed once: said once, and not tried again. */
  private failed = false;
  /** Where a failure to draw is said. */
  log: ((line: string) => void) | undefined;

  private constructor(
    private readonly server: LivePageServer,
    /** Undefined until a run follows the page (a capacity search opens it before its first run). */
    private facts: LiveRunFacts | undefined,
    private readonly now: () => number,
  ) {}

  /** The next run on the same page (a capacity search's runs, one after the other): its figures from now on. */
  follow(facts: LiveRunFacts): void {
    this.facts = facts;
    this.counts.clear();
    this.signature = "";
    this.failed = false;
  }

  static async open(address: LivePageAddress, facts: LiveRunFacts | undefined, now: () => number): Promise<LivePage> {
    return new LivePage(await LivePageServer.start(address), facts, now);
  }

  get url(): string {
    return this.server.url;
  }

  get transfer(): LiveTransfer {
    return this.server.transfer;
  }

  /** A region's tasks pending / running / stopped, as the progress line has them. */
  tasks(region: string, counts: RegionCounts): void {
    this.counts.set(region, { ...counts });
  }

  /**
   * After a poll of the feed: the figures when they changed, and the status line. Never throws: the
   * page is something to look at, and a figure it cannot draw must not stop the run it draws (the
   * feed's poll, --abort-on and the report go on; the page keeps its last figures).
   */
  show(snapshot: LiveSnapshot): void {
    const facts = this.facts;
    if (!facts || this.failed) return;
    try {
      const now = this.now();
      const server = facts.server?.() ?? null;
      const signature = `${figuresSignature(snapshot, facts.aborted())}|${server?.at.length ?? 0}`;
      if (signature !== this.signature) {
        this.signature = signature;
        const merged = this.merged(facts, snapshot, now, server);
        this.server.update(reportPageParts(merged, { title: `${facts.title}: live` }), now);
      }
      this.server.status(markdownToHtml(this.statusMarkdown(facts, snapshot, now)));
    } catch (err) {
      this.failed = true;
      this.log?.(`live page: cannot draw the run's figures (${(err as Error).name}); it keeps its last ones, and the run goes on`);
    }
  }

  /** The report is written (undefined: none could be): open pages reload into it, then the server closes. */
  async final(html: string | undefined): Promise<void> {
    await this.server.final(html);
  }

  async close(): Promise<void> {
    await this.server.close();
  }

  /** The run so far as merged results: one task per region, its periods the feed's merged ones. */
  merged(facts: LiveRunFacts, snapshot: LiveSnapshot, now: number, server: ServerSeries | null = null): MergedResults {
    const { config, scenarios } = facts;
    const cable = (config.cable ?? {}) as Record<string, unknown>;
    return liveResults({
      asOf: now,
      regions: [...snapshot.values()].map((region) => liveRegion(region, facts.expected(region.region))),
      test: {
        name: "",
        scenarios: scenarios.map((s, i) => (typeof s === "object" && s !== null && typeof (s as { name?: unknown }).name === "string" ? (s as { name: string }).name : String(i))),
        phases: Array.isArray(config.phases) ? (config.phases as MergedResults["test"]["phases"]) : [],
        maxFailedUsers: readMaxFailedUsers(cable.maxFailedUsers),
        ...(typeof cable.timeout === "number" && cable.timeout > 0 ? { timeoutMs: cable.timeout * 1000 } : {}),
      },
      aborted: facts.aborted() ?? null,
      server,
    });
  }

  /** Where the run is: its clock, each region's tasks, the cost so far; regions' names as text. */
  statusMarkdown(facts: LiveRunFacts, snapshot: LiveSnapshot, now: number): string {
    const startAt = facts.startAt();
    const planned = facts.plannedMs;
    const aborted = facts.aborted();
    const clock =
      startAt === null || startAt === undefined
        ? "waiting for the tasks to be ready"
        : now < startAt
          ? `load starts in ${formatDuration(startAt - now)}`
          : planned === undefined
            ? `${formatDuration(now - startAt)} elapsed`
            : now - startAt <= planned
              ? `${formatDuration(now - startAt)} of ${formatDuration(planned)}`
              : `${formatDuration(now - startAt)}, past the planned ${formatDuration(planned)}: users finishing their flows`;
    const regions = [...new Set([...snapshot.keys(), ...this.counts.keys()])].sort().map((name) => {
      const c = this.counts.get(name);
      const tasks = c ? `${c.pending} pending, ${c.running} running, ${c.stopped} stopped${c.failed > 0 ? ` (${c.failed} failed)` : ""}` : `${snapshot.get(name)?.tasks.size ?? 0} reporting`;
      return `${inline(name, 40)}: ${tasks}`;
    });
    const lines = [`**${aborted ? "⛔ Stopping" : "⏳ Live"}** · ${clock}${this.costSoFar(facts, startAt, now)} · updated ${new Date(now).toISOString().slice(11, 19)} UTC`];
    if (regions.length > 0) lines.push(`Tasks: ${regions.join(" · ")}`);
    if (aborted) lines.push(`Stopped early by \`--abort-on ${aborted.condition.replace(/`/g, "'")}\``);
    return lines.join("\n\n");
  }

  /** What Fargate has billed so far at the plan's price per task-second: tasks running since the start. */
  private costSoFar(facts: LiveRunFacts, startAt: number | null | undefined, now: number): string {
    const estimate = facts.estimate;
    if (!estimate || estimate.taskSeconds <= 0 || startAt === null || startAt === undefined || now < startAt) return "";
    const running = [...this.counts.values()].reduce((n, c) => n + c.running + c.stopped, 0);
    const usd = (running * ((now - startAt) / 1000) * estimate.usd) / estimate.taskSeconds;
    return ` · cost so far up to $${usd.toFixed(2)} of $${estimate.usd.toFixed(2)} estimated`;
  }
}

/** One region of the feed as the live page's input: its merged periods, its task count, its phases' first starts. */
export function liveRegion(region: RegionLive, expectedTasks: number): LiveRegion {
  const phases = new Map<number, { index: number; name: string; startTime: number }>();
  for (const task of region.tasks.values()) {
    for (const p of task.phases) {
      const known = phases.get(p.index);
      if (!known || p.startTime < known.startTime) phases.set(p.index, { index: p.index, name: p.name, startTime: p.startTime });
    }
  }
  return {
    name: region.region,
    periods: region.periods().map((fold) => ({ period: fold.period, counters: fold.counters, sketches: fold.sketches, cpuPercent: fold.cpu })),
    tasks: region.tasks.size,
    expectedTasks,
    phaseStarts: [...phases.values()].sort((a, b) => a.index - b.index),
  };
}

/** What changes the figures: a task's file folded in, a task seen or ended, a phase started, the early stop. */
function figuresSignature(snapshot: LiveSnapshot, aborted: unknown): string {
  const parts: string[] = [];
  for (const region of snapshot.values()) {
    let files = 0;
    for (const fold of region.periods()) files += fold.tasks.size;
    let ended = 0;
    let phases = 0;
    for (const task of region.tasks.values()) {
      if (task.ended) ended++;
      phases += task.phases.length;
    }
    parts.push(`${region.region}:${files}:${region.tasks.size}:${ended}:${phases}`);
  }
  return `${parts.join("|")}|${aborted ? "aborted" : ""}`;
}
