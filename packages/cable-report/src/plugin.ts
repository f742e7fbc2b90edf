// Artillery plugin (`config.plugins: { cable-report: {} }`) that writes the
// sidecar beside `--output`. Artillery loads plugins in every worker thread and
// once in the main thread; only the main thread sees the workers' metrics
// merged per period (launch-platform.ts emits `stats` and `done` on the
// plugin event bus with the live DDSketch objects), so the workers do nothing.
import type { EventEmitter } from "node:events";
import { statSync } from "node:fs";
import { isMainThread } from "node:worker_threads";
import { JUDGED_BY_RUNNER_ENV, judgeFailedUsers, overLineMessage, readMaxFailedUsers, type FailedUsersVerdict, type MaxFailedUsers } from "artillery-engine-cable/failed-users";
import { writeFileAtomic } from "./atomic-write.js";
import { notEvaluated } from "./unevaluated.js";
import { PluginLivePage, readLiveSetting } from "./plugin-live.js";
import { parseSoakMinimum, pluginOptionsSchema, verdictCheckProblems } from "./verdict-checks.js";
import { CpuMeter, recordPeriod, type ArtilleryPeriodStats, type PhaseStart } from "./period.js";
import { redactTarget, serverFromCounters } from "./target.js";
import {
  encodeSketch,
  RELATIVE_ACCURACY,
  SIDECAR_FORMAT,
  SIDECAR_VERSION,
  serverWordsSchema,
  sidecarPathFor,
  type CheckOutcome,
  type Phase,
  type ServerWords,
  type Sidecar,
} from "./sidecar.js";

/** What the ensure plugin emits on `checks` (artillery-plugin-ensure/dist/plugin.js). */
interface EnsureCheck {
  original: string;
  strict: boolean;
  result: unknown;
}

interface ArtilleryGlobal {
  version: string;
  testRunId?: string;
  testInfo?: { flags?: { output?: string }; tags?: Array<{ name: string; value: string }> };
  globalEvents: EventEmitter;
  ext(extension: { ext: "beforeExit" | "onShutdown"; method: (event: unknown) => Promise<void> }): void;
  /** Prints its arguments as console.log does (update-global-object.ts): no level. */
  log(message: string): void;
  /** What `artillery run` exits with; the ensure plugin sets it too. */
  suggestedExitCode?: number;
}

interface PluginScript {
  /** `config.target`: Artillery has applied --target, -e and the templates by the time the plugin sees it. */
  config?: { target?: unknown; phases?: Phase[]; plugins?: Record<string, unknown>; cable?: { maxFailedUsers?: unknown; timeout?: unknown } };
  scenarios?: Array<{ name?: string }>;
}

declare global {
  var artillery: ArtilleryGlobal | undefined;
}

/** Artillery hands v2 plugins the new metrics format (with DDSketch objects) only when this is false. */
export const LEGACY_METRICS_FORMAT = false;

/** The plugin's own options the sidecar carries to the merge: its ensure conditions and soakMinimum (ms). */
function pluginSettings(script: PluginScript): { verdictChecks: string[]; soakMinimumMs?: number } {
  const parsed = pluginOptionsSchema.safeParse(script.config?.plugins?.["cable-report"] ?? {});
  if (!parsed.success) return { verdictChecks: [] };
  let soakMinimumMs: number | undefined;
  try {
    if (parsed.data.soakMinimum !== undefined) soakMinimumMs = parseSoakMinimum(parsed.data.soakMinimum);
  } catch {
    // said before the load, with the other problems (verdictCheckProblems)
  }
  return { verdictChecks: parsed.data.ensure ?? [], soakMinimumMs };
}

export class Plugin {
  private readonly periods: Sidecar["periods"] = [];
  private readonly phaseStarts: PhaseStart[] = [];
  private readonly cpu = new CpuMeter();
  private checks: CheckOutcome[] | null = null;
  private readonly serverWords = new ServerWordsSample();
  private sidecar: Sidecar | undefined;

  constructor(script: PluginScript, events: EventEmitter) {
    const artillery = global.artillery;
    if (!isMainThread || !artillery) return;
    // The ensure plugin evaluates its checks in a `beforeExit` hook, after the
    // report is written, and never stores them in the report.
    artillery.globalEvents.on("checks", (checks: EnsureCheck[]) => {
      this.checks = checks.map((c) => ({ check: c.original, strict: c.strict, passed: c.result === 1 }));
    });
    // Judged with or without --output: a run in which users failed never exits 0 unnoticed.
    this.judgeUsers(artillery, events, readMaxFailedUsers(script.config?.cable?.maxFailedUsers));
    const live = this.startLive(script, events, artillery);

    // Serialize each period as it arrives: Artillery later deletes the
    // histograms from these same objects when it writes the report.
    events.on("phaseStarted", (phase: { index: number; name?: string; startTime?: number }) => {
      this.cpu.begin();
      this.phaseStarts.push({ index: phase.index, name: phase.name ?? "", startTime: phase.startTime ?? Date.now() });
    });
    const output = artillery.testInfo?.flags?.output;
    // Periods are kept only for a sidecar that will be written; the live page keeps its own.
    const sidecarWanted = Boolean(output) && !isDirectory(output!);
    events.on("stats", (stats: ArtilleryPeriodStats) => {
      if (!sidecarWanted && !live) return;
      const record = recordPeriod(stats, this.cpu.mark());
      if (sidecarWanted) this.periods.push(record);
      live?.period(record);
    });

    if (!output) {
      artillery.log("cable-report: no --output given, so no sketches sidecar is written");
      return;
    }
    if (isDirectory(output)) {
      // Artillery names the report itself (a timestamp) when --output is a directory; the sidecar must sit beside a known file.
      artillery.log(`cable-report: --output ${output} is a directory; give a file name to get a sketches sidecar`);
      return;
    }
    const sidecarPath = sidecarPathFor(output);
    // Redacted here, before anything holds it: credentials, a token in the query never reach a file.
    const targetUrl = redactTarget(script.config?.target);
    // The merger judges them; a typo is said now, before the load (and fails its check in the report).
    for (const problem of verdictCheckProblems(script.config?.plugins?.["cable-report"])) artillery.log(`cable-report: ${problem}`);

    // The engine logs the server's words for refusals (a few per cause and worker); keep a sample.
    artillery.globalEvents.on("log", (opts: { cableServerWords?: unknown } | undefined) => this.serverWords.offer(opts?.cableServerWords));

    events.on("done", (stats: ArtilleryPeriodStats) => {
      this.cpu.mark();
      this.sidecar = {
        format: SIDECAR_FORMAT,
        version: SIDECAR_VERSION,
        artilleryVersion: artillery.version,
        testRunId: artillery.testRunId ?? "",
        test: testFacts(script, artillery),
        relativeAccuracy: RELATIVE_ACCURACY,
        aggregate: {
          counters: { ...stats.counters },
          rates: { ...stats.rates },
          histograms: Object.fromEntries(
            Object.entries(stats.histograms ?? {}).map(([name, sketch]) => [name, encodeSketch(sketch)]),
          ),
        },
        periods: [...this.periods].sort((a, b) => a.period - b.period),
        phaseStarts: [...this.phaseStarts],
        checks: null,
        generator: this.cpu.summary(),
        // The server's words about itself come from every worker thread as counters (engine's server-software.ts).
        target: { url: targetUrl, server: serverFromCounters(stats.counters) },
        ...(this.serverWords.size > 0 ? { serverWords: this.serverWords.list() } : {}),
      };
      this.write(sidecarPath);
    });

    // onShutdown runs once every beforeExit hook (ensure's included) has settled.
    artillery.ext({
      ext: "onShutdown",
      method: async () => {
        if (this.sidecar && this.checks) {
          this.sidecar.checks = this.checks;
          this.write(sidecarPath);
        }
      },
    });
  }

  /**
   * The live page (`live: true` or CABLE_LIVE=1), from the periods as they come; at the end, after
   * the checks, the page becomes the run's report. Null when not asked for.
   */
  private startLive(script: PluginScript, events: EventEmitter, artillery: ArtilleryGlobal): PluginLivePage | null {
    const setting = readLiveSetting((script.config?.plugins?.["cable-report"] ?? {}) as Record<string, unknown>, process.env);
    if (!setting) return null;
    if ("problem" in setting) {
      artillery.log(`cable-report: ${setting.problem}`);
      return null;
    }
    const page = new PluginLivePage(setting, { log: (line) => artillery.log(line), test: testFacts(script, artillery), plannedMs: plannedMs(script.config?.phases ?? []) });
    void page.start(events);
    // After ensure's beforeExit hook, which hands over the checks.
    artillery.ext({ ext: "onShutdown", method: (opts) => page.final(this.checks, Boolean((opts as { earlyStop?: boolean } | undefined)?.earlyStop)) });
    return page;
  }

  /**
   * The failure line on every worker's users together (failed-users.ts), and the checks that tested
   * nothing (unevaluated.ts), said in the console after Artillery's summary; over the line,
   * `artillery run` exits 1. A fan-out task leaves the line to its runner, which judges the merged run.
   */
  private judgeUsers(artillery: ArtilleryGlobal, events: EventEmitter, max: MaxFailedUsers): void {
    let verdict: FailedUsersVerdict | null = null;
    let counters: Record<string, number> = {};
    events.on("done", (stats: ArtilleryPeriodStats) => {
      counters = { ...stats.counters };
      verdict = judgeFailedUsers(max, { created: counters["vusers.created"] ?? 0, failed: counters["vusers.failed"] ?? 0 });
    });
    const byRunner = Boolean(process.env[JUDGED_BY_RUNNER_ENV]);
    artillery.ext({
      ext: "beforeExit",
      method: async () => {
        if (!verdict || byRunner) return;
        if (verdict.over) {
          artillery.suggestedExitCode = 1;
          artillery.log(`cable-report: ${overLineMessage(verdict, "artillery run exits 1")}`);
        } else if (verdict.failed > 0) {
          artillery.log(`cable-report: ${verdict.failed} of ${verdict.created} virtual users failed, within config.cable.maxFailedUsers (${verdict.line})`);
        }
      },
    });
    artillery.ext({
      ext: "onShutdown",
      method: async () => {
        for (const c of this.checks ?? []) {
          const why = notEvaluated(c.check, counters);
          if (why) artillery.log(`cable-report: ensure "${c.check}" was not evaluated: ${why}; it ${c.passed ? "passed" : "failed"} without testing anything`);
        }
      },
    });
  }

  private write(path: string): void {
    try {
      writeFileAtomic(path, JSON.stringify(this.sidecar));
    } catch (err) {
      global.artillery?.log(`cable-report: could not write ${path}: ${(err as Error).message}`);
    }
  }
}

/** What the sidecar (and the live page) says of the test. */
function testFacts(script: PluginScript, artillery: ArtilleryGlobal): Sidecar["test"] {
  return {
    name: artillery.testInfo?.tags?.find((t) => t.name === "name")?.value ?? "",
    scenarios: (script.scenarios ?? []).map((s, i) => s.name ?? String(i)),
    phases: script.config?.phases ?? [],
    ...pluginSettings(script),
    maxFailedUsers: readMaxFailedUsers(script.config?.cable?.maxFailedUsers),
    timeoutMs: timeoutMs(script.config?.cable?.timeout),
  };
}

/** The phases' planned length when every duration and pause is a number of seconds; undefined otherwise. */
function plannedMs(phases: Phase[]): number | undefined {
  let total = 0;
  for (const phase of phases as Array<{ duration?: unknown; pause?: unknown }>) {
    const seconds = phase.duration ?? phase.pause;
    if (typeof seconds !== "number" || !Number.isFinite(seconds)) return undefined;
    total += seconds * 1000;
  }
  return total;
}

/** `config.cable.timeout` (s) in ms, the engine's default when unset or unreadable. */
function timeoutMs(raw: unknown): number {
  return typeof raw === "number" && Number.isFinite(raw) && raw > 0 ? raw * 1000 : DEFAULT_TIMEOUT_MS;
}

/** The engine's `config.cable.timeout` default (config.ts), 10 s. */
const DEFAULT_TIMEOUT_MS = 10_000;

function isDirectory(path: string): boolean {
  try {
    return statSync(path).isDirectory();
  } catch {
    return false;
  }
}

/** The server's words across worker threads: each distinct text once, at most PER_KEY per error and cause. */
export class ServerWordsSample {
  private static readonly PER_KEY = 3;
  private static readonly MAX = 100;
  private readonly words: ServerWords[] = [];

  get size(): number {
    return this.words.length;
  }

  offer(value: unknown): void {
    const parsed = serverWordsSchema.safeParse(value);
    if (!parsed.success || this.words.length >= ServerWordsSample.MAX) return;
    const w = parsed.data;
    const same = this.words.filter((x) => x.error === w.error && x.cause === w.cause);
    if (same.length >= ServerWordsSample.PER_KEY || same.some((x) => x.text === w.text)) return;
    this.words.push(w);
  }

  list(): ServerWords[] {
    return [...this.words];
  }
}
