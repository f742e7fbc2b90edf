import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync, writeFileSync, existsSync } from "node:fs";
import os from "node:os";
import path from "node:path";

/** The parts of Artillery's JSON report (`-o`) that tests read. */
export interface ArtilleryReport {
  aggregate: {
    counters: Record<string, number>;
    rates: Record<string, number>;
    summaries: Record<string, { min: number; max: number; count: number; mean: number; p50: number; p95: number; p99: number }>;
  };
  intermediate: { counters: Record<string, number>; period: number }[];
}

export interface ArtilleryRun {
  code: number | null;
  output: string;
  /** Absent when Artillery wrote no report (it failed before the run). */
  report?: ArtilleryReport;
  reportPath: string;
  durationMs: number;
}

export interface RunOptions {
  /** A scenario file to run, or a script object written to a temporary YAML (JSON is YAML). */
  script: string | Record<string, unknown>;
  /** Extra CLI arguments, e.g. `["--target", url]`. */
  args?: string[];
  env?: NodeJS.ProcessEnv;
  cwd?: string;
  /** Kill the run after this long: a hung VU must fail the test, not the suite. */
  timeoutMs?: number;
  /** Where to write the report; a temporary directory by default. */
  outputDir?: string;
  /**
   * A command the run is started under, which must exec it (so that the timeout's kill reaches
   * Artillery itself): `["taskset", "-c", "0"]` pins it to core 0, `["nice", "-n", "19"]` lowers it.
   */
  wrap?: string[];
  /** Each chunk of Artillery's output as it arrives (stdout and stderr). */
  onOutput?: (text: string) => void;
}

const repoRoot = path.resolve(__dirname, "../../..");
const artilleryBin = path.join(path.dirname(require.resolve("artillery/package.json", { paths: [repoRoot] })), "bin", "run");

/** Runs the real `artillery run` CLI in a child process and reads its JSON report. */
export async function runArtillery(options: RunOptions): Promise<ArtilleryRun> {
  const dir = options.outputDir ?? mkdtempSync(path.join(os.tmpdir(), "artillery-"));
  let scriptPath: string;
  if (typeof options.script === "string") {
    scriptPath = options.script;
  } else {
    scriptPath = path.join(dir, "scenario.yml");
    writeFileSync(scriptPath, JSON.stringify(options.script, null, 2));
  }
  const reportPath = path.join(dir, "report.json");
  const startedAt = Date.now();
  const command = [...(options.wrap ?? []), process.execPath, artilleryBin, "run", "-o", reportPath, ...(options.args ?? []), scriptPath];
  const child = spawn(command[0], command.slice(1), {
    cwd: options.cwd ?? repoRoot,
    env: { ...process.env, ARTILLERY_DISABLE_TELEMETRY: "true", ...options.env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let output = "";
  const take = (c: Buffer) => {
    output += c.toString();
    options.onOutput?.(c.toString());
  };
  child.stdout.on("data", take);
  child.stderr.on("data", take);
  const timeoutMs = options.timeoutMs ?? 60_000;
  const timer = setTimeout(() => {
    output += `\n[runArtillery: killed after ${timeoutMs} ms]`;
    child.kill("SIGKILL");
  }, timeoutMs);
  const code = await new Promise<number | null>((resolve) => child.on("close", (c) => resolve(c)));
  clearTimeout(timer);
  const report = existsSync(reportPath) ? (JSON.parse(readFileSync(reportPath, "utf8")) as ArtilleryReport) : undefined;
  return { code, output, report, reportPath, durationMs: Date.now() - startedAt };
}

/** A counter of the run's aggregate, 0 when Artillery never counted it. */
export function counter(report: ArtilleryReport, name: string): number {
  return report.aggregate.counters[name] ?? 0;
}

/** How many samples a histogram of the run's aggregate holds, 0 when it has none. */
export function samples(report: ArtilleryReport, name: string): number {
  return report.aggregate.summaries[name]?.count ?? 0;
}
