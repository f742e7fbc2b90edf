// The live page for one `artillery run` (`plugins: { cable-report: { live: true } }`, or
// CABLE_LIVE=1): the plugin's periods, as Artillery's main thread merges them across its workers,
// drawn by the live page (live.ts, live-server.ts) as one region, this machine; at the end, the
// run's own report page, with its checks.
import { hostname } from "node:os";
import { JUDGED_BY_RUNNER_ENV } from "artillery-engine-cable/failed-users";
import type { EventEmitter } from "node:events";
import { renderReportPage, reportPageParts } from "./html.js";
import { liveResults, type LiveRegion } from "./live.js";
import { taskFromPeriods } from "./live-task.js";
import { LivePageServer } from "./live-server.js";
import { markdownToHtml } from "./html.js";
import { periodSketches, type PeriodRecord, type PhaseStart } from "./period.js";
import { mergeRegions } from "./results.js";
import type { CheckOutcome, Sidecar } from "./sidecar.js";
import { clock, inline } from "./text.js";

/** Hosts only this machine reaches: a page on them needs no warning (cable-fanout's --live-host reads them alike). */
function isLoopback(host: string): boolean {
  const h = host.toLowerCase().replace(/^\[|\]$/g, "");
  return h === "localhost" || h === "::1" || /^127(\.\d{1,3}){3}$/.test(h);
}

/** The environment variable that asks for the live page without touching the scenario: 1, or a port. */
export const LIVE_ENV = "CABLE_LIVE";

export interface PluginLiveSetting {
  port: number;
  host: string;
}

/**
 * `live: true | PORT` (and `liveHost`), or CABLE_LIVE=1 / CABLE_LIVE=PORT; null when not asked.
 * A value it cannot read is an error naming it, said before the load.
 */
export function readLiveSetting(options: Record<string, unknown>, env: NodeJS.ProcessEnv): PluginLiveSetting | { problem: string } | null {
  // A fan-out task: its runner serves the run's page (cable-fanout --live); a page per task would only hold ports.
  if (env[JUDGED_BY_RUNNER_ENV]) return null;
  const host = options.liveHost === undefined ? "127.0.0.1" : options.liveHost;
  if (typeof host !== "string" || host.length === 0) return { problem: "config.plugins.cable-report.liveHost: give a host name or address, such as 127.0.0.1" };
  const fromEnv = env[LIVE_ENV];
  const raw = options.live ?? (fromEnv === undefined || fromEnv === "" || fromEnv === "0" ? undefined : fromEnv === "1" || fromEnv === "true" ? true : Number(fromEnv));
  if (raw === undefined || raw === false) return null;
  if (raw === true) return { port: 0, host };
  if (typeof raw === "number" && Number.isInteger(raw) && raw > 0 && raw < 65536) return { port: raw, host };
  const where = options.live !== undefined ? "config.plugins.cable-report.live" : LIVE_ENV;
  return { problem: `${where}: give true (any free port) or a port number from 1 to 65535` };
}

export interface PluginLiveRun {
  log(line: string): void;
  /** The sidecar's own `test` facts, as the plugin knows them before the load. */
  test: Sidecar["test"];
  plannedMs: number | undefined;
}

/** The live page of one Artillery process: started before the load, fed every period, the report at the end. */
export class PluginLivePage {
  private readonly periods: PeriodRecord[] = [];
  private readonly phaseStarts: PhaseStart[] = [];
  private readonly region = hostname() || "this machine";
  private startedAt: number | null = null;
  private server: LivePageServer | undefined;
  private ended = false;
  /** Drawing failed once: said once, not tried again (the run itself goes on). */
  private failed = false;

  constructor(
    private readonly setting: PluginLiveSetting,
    private readonly run: PluginLiveRun,
  ) {}

  async start(events: EventEmitter): Promise<void> {
    // Heard from now on, before the server listens: the first phase may start meanwhile.
    events.on("phaseStarted", (phase: { index: number; name?: string; startTime?: number }) => {
      const startTime = phase.startTime ?? Date.now();
      this.startedAt ??= startTime;
      this.phaseStarts.push({ index: phase.index, name: phase.name ?? "", startTime });
      this.show();
    });
    // A clock on the page between periods.
    const tick = setInterval(() => this.status(), 2_000).unref();
    events.once("done", () => clearInterval(tick));
    try {
      this.server = await LivePageServer.start(this.setting);
    } catch (err) {
      clearInterval(tick);
      this.run.log(`cable-report: the live page cannot listen on ${this.setting.host}:${this.setting.port} (${(err as NodeJS.ErrnoException).code ?? (err as Error).name}); the run goes on without it`);
      return;
    }
    this.run.log(`cable-report: live page at ${this.server.url}`);
    if (!isLoopback(this.setting.host)) {
      this.run.log(`cable-report: ⚠️ the live page listens on ${this.setting.host}: anyone who can reach it and has its URL (the token) sees the run`);
    }
    this.show();
  }

  /** A period as the plugin recorded it (recordPeriod). */
  period(record: PeriodRecord): void {
    if (this.ended) return;
    this.periods.push(record);
    this.show();
  }

  /**
   * The run is over and its checks are known: the page becomes its report. `earlyStop`: Artillery
   * was stopped (Ctrl-C), so its users were cut off: the report says the run was cut short.
   */
  async final(checks: CheckOutcome[] | null, earlyStop: boolean): Promise<void> {
    this.ended = true;
    if (!this.server) return;
    const task = { ...taskFromPeriods(this.periods, this.phaseStarts, `${this.region}/live`), partial: earlyStop, test: this.run.test, checks };
    const merged = mergeRegions(this.periods.length > 0 ? [{ name: this.region, tasks: [task], files: [task.reportFile] }] : [], { regions: [this.region] });
    await this.server.final(renderReportPage(merged, {}));
  }

  /** Never throws: it runs inside Artillery's own event handlers, where a throw would end the load test. */
  private show(): void {
    if (!this.server || this.ended || this.failed) return;
    try {
      this.draw(this.server);
    } catch (err) {
      this.failed = true;
      this.run.log(`cable-report: the live page cannot draw the run's figures (${(err as Error).name}); it keeps its last ones, and the run goes on`);
    }
  }

  private draw(server: LivePageServer): void {
    const region: LiveRegion = {
      name: this.region,
      periods: [...this.periods].sort((a, b) => a.period - b.period).map((p) => ({ period: p.period, counters: p.counters, sketches: periodSketches(p), cpuPercent: p.cpuPercent ?? null })),
      tasks: 1,
      expectedTasks: 1,
      phaseStarts: this.phaseStarts,
    };
    server.update(reportPageParts(liveResults({ regions: [region], test: this.run.test, asOf: Date.now() }), { title: `${this.run.test.name || "artillery run"}: live` }));
    this.status();
  }

  private status(): void {
    if (!this.server || this.ended) return;
    const now = Date.now();
    const elapsed = this.startedAt === null ? "waiting for the first phase" : `${clock(now - this.startedAt)}${this.run.plannedMs !== undefined ? ` of ${clock(this.run.plannedMs)}` : " elapsed"}`;
    this.server.status(markdownToHtml(`**⏳ Live** · ${elapsed} · ${inline(this.region, 40)} · updated ${new Date(now).toISOString().slice(11, 19)} UTC`));
  }
}
