// `cable-fanout compare`: the same scenario against each server in turn, from the same generator
// tasks and regions, a pause between them, then one report with a column per server.
import path from "node:path";
import { compareServers, loadResultsDir, renderMarkdown, serverFiguresSection, serverGateSection, serverRegressions, writeFileAtomic, type MergedResults, type Regression, type ServerRun } from "artillery-plugin-cable-report";
import { EXIT } from "../run/collect.js";
import type { RunDeps, RunOptions } from "../run/run-options.js";
import { newRunId, runFanout } from "../run/runner.js";
import { refuseUnrunnable } from "../plan/launch.js";
import { processFigures, sampleProcess, watchProcess } from "./process-meter.js";

export interface CompareTarget {
  /** The column's heading: letters, digits, ".", "_", "-". */
  name: string;
  url: string;
  /** --server-metrics NAME=URL: the server's Prometheus endpoint, charted in its run's report. */
  serverMetricsUrl?: string;
  /** --server-pid NAME=PID: a server on this machine, its memory and CPU read from /proc with its children's. */
  serverPids?: number[];
}

export interface CompareOptions extends Omit<RunOptions, "target" | "runId" | "serverMetricsUrl" | "baseline" | "regressionThreshold"> {
  targets: CompareTarget[];
  /** Between two servers' runs: the generator and the network settle, the last server's sockets close. */
  pauseMs: number;
  compareId?: string;
  /** --fail-on-regression: exit 1 when a server is worse than the first by this much (percent); the section uses 10% without it. */
  regressionThreshold?: number;
}

/** The gate's threshold in the report when --fail-on-regression is not given. */
export const DEFAULT_SERVER_GATE_PERCENT = 10;

export interface CompareResult {
  exitCode: number;
  compareId: string;
  dir: string;
  reportFile: string;
  mergedFile: string;
  merged: MergedResults;
  /** Cells where a server is worse than the first (serverRegressions). */
  regressions: Regression[];
  servers: { name: string; runDir?: string; exitCode?: number; error?: string }[];
}

/** How long after a run the server's "after" memory is read: its sockets closed, its GC had a moment. */
const SETTLE_MS = 5_000;

export async function runCompare(options: CompareOptions, deps: RunDeps): Promise<CompareResult> {
  // A server's failed run does not stop the others: a file the bundle refuses, a payload that does not parse or a variable no task has would fail them all, so it stops the comparison at once.
  refuseUnrunnable({ ...options, target: options.targets[0]?.url }, deps.backend.kind);
  const compareId = options.compareId ?? (deps.newRunId ?? newRunId)();
  const dir = path.resolve(options.outDir, compareId);
  const servers: CompareResult["servers"] = [];
  const runs: ServerRun[] = [];
  for (const [i, target] of options.targets.entries()) {
    if (deps.abort.signal.aborted) break;
    if (i > 0) {
      deps.log(`compare: ${Math.round(options.pauseMs / 1000)} s before ${target.name}`);
      await deps.sleep(options.pauseMs, deps.abort.signal);
      if (deps.abort.signal.aborted) break;
    }
    deps.log(`compare: ${target.name} (${i + 1} of ${options.targets.length}) at ${target.url}`);
    const idle = target.serverPids ? sampleProcess(target.serverPids) : undefined;
    const watch = target.serverPids ? watchProcess(target.serverPids) : undefined;
    const run: ServerRun = { name: target.name };
    try {
      const { targets: _t, pauseMs: _p, compareId: _c, regressionThreshold: _r, ...runOptions } = options;
      const result = await runFanout(
        {
          ...runOptions,
          outDir: dir,
          target: target.url,
          runId: target.name,
          // Each server's run is kept as its own (its target makes it comparable only with itself); compare's gate is between servers, not against the history.
          ...(options.history ? { history: { ...options.history, kind: "compare" as const, label: target.name } } : {}),
          serverMetricsUrl: target.serverMetricsUrl,
          title: `${options.title ?? "Servers compared"}: ${target.name}`,
          // The first server's run shows the plan and guards the whole comparison's cost; the others only run.
          runsInAll: options.targets.length,
          plan: i === 0 ? "block" : "quiet",
        },
        deps,
      );
      servers.push({ name: target.name, runDir: result.runDir, exitCode: result.exitCode });
      try {
        run.regions = loadResultsDir(result.runDir).regions;
      } catch (err) {
        deps.log(`compare: ${target.name} left no results (${(err as Error).message})`);
      }
    } catch (err) {
      // One server's failed run must not cost the others their columns.
      servers.push({ name: target.name, error: (err as Error).message });
      deps.log(`compare: ${target.name} failed: ${(err as Error).message}`);
    } finally {
      watch?.stop();
    }
    if (target.serverPids && idle && watch) {
      await deps.sleep(SETTLE_MS, deps.abort.signal);
      run.process = processFigures(idle, watch.samples, sampleProcess(target.serverPids), target.serverPids.length > 1 ? `processes ${target.serverPids.join(", ")} and their children` : `process ${target.serverPids[0]} and its children`);
    }
    runs.push(run);
  }
  for (const target of options.targets.slice(runs.length)) runs.push({ name: target.name });

  const notes = servers.filter((s) => s.error).map((s) => `${s.name}: the run failed (${s.error}).`);
  const merged = compareServers(runs, notes);
  const title = options.title ?? `Servers compared: ${options.targets.map((t) => t.name).join(", ")}`;
  const threshold = options.regressionThreshold ?? DEFAULT_SERVER_GATE_PERCENT;
  const regressions = serverRegressions(merged, threshold);
  const markdown = [renderMarkdown(merged, { title, servers: true }).trimEnd(), ...serverGateSection(merged, threshold, regressions), ...serverFiguresSection(runs), ""].join("\n");
  const reportFile = path.join(dir, "report.md");
  const mergedFile = path.join(dir, "merged.json");
  writeFileAtomic(reportFile, markdown);
  writeFileAtomic(mergedFile, `${JSON.stringify({ ...merged, servers: runs.map((r) => ({ name: r.name, process: r.process ?? null })), againstFirst: { threshold, regressions } }, null, 2)}\n`);
  // Interrupted; a server without results (as a region without them); else the first run's own failure.
  const exitCode = deps.abort.signal.aborted
    ? EXIT.aborted
    : runs.some((r) => !r.regions)
      ? EXIT.regionFailed
      : (servers.find((s) => (s.exitCode ?? 0) !== 0)?.exitCode ?? (options.regressionThreshold !== undefined && regressions.length > 0 ? EXIT.regression : EXIT.ok));
  return { exitCode, compareId, dir, reportFile, mergedFile, merged, regressions, servers };
}
