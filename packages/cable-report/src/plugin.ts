// Artillery plugin (`config.plugins: { cable-report: {} }`) that writes the
// sidecar beside `--output`. Artillery loads plugins in every worker thread and
// once in the main thread; only the main thread sees the workers' metrics
// merged per period (launch-platform.ts emits `stats` and `done` on the
// plugin event bus with the live DDSketch objects), so the workers do nothing.
import type { EventEmitter } from "node:events";
import { statSync } from "node:fs";
import { cpus } from "node:os";
import { isMainThread } from "node:worker_threads";
import type { DDSketch } from "@artilleryio/sketches-js";
import { writeFileAtomic } from "./atomic-write.js";
import {
  encodeSketch,
  RELATIVE_ACCURACY,
  SIDECAR_FORMAT,
  SIDECAR_VERSION,
  sidecarPathFor,
  type CheckOutcome,
  type Phase,
  type Sidecar,
} from "./sidecar.js";

/** The parts of Artillery's period metrics (ssms.ts PeriodMetrics) the sidecar keeps. */
interface PeriodStats {
  period: number | string;
  counters?: Record<string, number>;
  rates?: Record<string, number>;
  histograms?: Record<string, DDSketch>;
}

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
  log(message: string, level?: string): void;
}

interface PluginScript {
  config?: { phases?: Phase[] };
  scenarios?: Array<{ name?: string }>;
}

declare global {
  // eslint-disable-next-line no-var
  var artillery: ArtilleryGlobal | undefined;
}

/** Artillery hands v2 plugins the new metrics format (with DDSketch objects) only when this is false. */
export const LEGACY_METRICS_FORMAT = false;

/**
 * CPU use of the whole process (every worker thread, the main thread, GC) over
 * wall time, in % of Artillery's worker threads (launch-platform: one per core
 * but one), from the first phase's start: before it, loading the script and
 * starting the workers would count as load. Windows end at each period report;
 * a window under a second is too short to mean anything.
 */
class CpuMeter {
  private readonly workers = Math.max(1, cpus().length - 1);
  private start?: { usage: NodeJS.CpuUsage; at: number };
  private last?: { usage: NodeJS.CpuUsage; at: number };
  private peak: number | null = null;

  begin(): void {
    if (this.start) return;
    this.start = this.last = { usage: process.cpuUsage(), at: performance.now() };
  }

  /** Closes a window (at a period report, or at the end). */
  mark(): void {
    if (!this.last) return;
    const now = { usage: process.cpuUsage(), at: performance.now() };
    const percent = this.percent(this.last, now);
    if (percent !== null) this.peak = Math.max(this.peak ?? 0, percent);
    this.last = now;
  }

  summary(): NonNullable<Sidecar["generator"]> {
    const mean = this.start && this.last ? this.percent(this.start, this.last) : null;
    return { workers: this.workers, cpuMean: mean, cpuPeak: this.peak };
  }

  private percent(from: { usage: NodeJS.CpuUsage; at: number }, to: { usage: NodeJS.CpuUsage; at: number }): number | null {
    const wallMs = to.at - from.at;
    if (wallMs < 1_000) return null;
    const cpuMs = (to.usage.user - from.usage.user + to.usage.system - from.usage.system) / 1_000;
    return Math.round((cpuMs / wallMs / this.workers) * 1_000) / 10;
  }
}

export class Plugin {
  private readonly periods: Sidecar["periods"] = [];
  private readonly cpu = new CpuMeter();
  private checks: CheckOutcome[] | null = null;
  private sidecar: Sidecar | undefined;

  constructor(script: PluginScript, events: EventEmitter) {
    const artillery = global.artillery;
    if (!isMainThread || !artillery) return;

    const output = artillery.testInfo?.flags?.output;
    if (!output) {
      artillery.log("cable-report: no --output given, so no sketches sidecar is written", "warn");
      return;
    }
    if (isDirectory(output)) {
      // Artillery names the report itself (a timestamp) when --output is a directory; the sidecar must sit beside a known file.
      artillery.log(`cable-report: --output ${output} is a directory; give a file name to get a sketches sidecar`, "warn");
      return;
    }
    const sidecarPath = sidecarPathFor(output);

    // Serialize each period as it arrives: Artillery later deletes the
    // histograms from these same objects when it writes the report.
    events.on("phaseStarted", () => this.cpu.begin());
    events.on("stats", (stats: PeriodStats) => {
      this.cpu.mark();
      this.periods.push({
        period: Number(stats.period),
        counters: { ...stats.counters },
        rates: { ...stats.rates },
      });
    });

    events.on("done", (stats: PeriodStats) => {
      this.cpu.mark();
      this.sidecar = {
        format: SIDECAR_FORMAT,
        version: SIDECAR_VERSION,
        artilleryVersion: artillery.version,
        testRunId: artillery.testRunId ?? "",
        test: {
          name: artillery.testInfo?.tags?.find((t) => t.name === "name")?.value ?? "",
          scenarios: (script.scenarios ?? []).map((s, i) => s.name ?? String(i)),
          phases: script.config?.phases ?? [],
        },
        relativeAccuracy: RELATIVE_ACCURACY,
        aggregate: {
          counters: { ...stats.counters },
          rates: { ...stats.rates },
          histograms: Object.fromEntries(
            Object.entries(stats.histograms ?? {}).map(([name, sketch]) => [name, encodeSketch(sketch)]),
          ),
        },
        periods: [...this.periods].sort((a, b) => a.period - b.period),
        checks: null,
        generator: this.cpu.summary(),
      };
      this.write(sidecarPath);
    });

    // The ensure plugin evaluates its checks in a `beforeExit` hook, after the
    // report is written, and never stores them in the report.
    artillery.globalEvents.on("checks", (checks: EnsureCheck[]) => {
      this.checks = checks.map((c) => ({ check: c.original, strict: c.strict, passed: c.result === 1 }));
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

  private write(path: string): void {
    try {
      writeFileAtomic(path, JSON.stringify(this.sidecar));
    } catch (err) {
      global.artillery?.log(`cable-report: could not write ${path}: ${(err as Error).message}`, "error");
    }
  }
}

function isDirectory(path: string): boolean {
  try {
    return statSync(path).isDirectory();
  } catch {
    return false;
  }
}
