import { type ChildProcess, spawn } from "node:child_process";
import { createWriteStream, readFileSync } from "node:fs";
import path from "node:path";
import { createInterface } from "node:readline";
import type { Writable } from "node:stream";

export interface ArtilleryRun {
  /** The scenario file, absolute. */
  scenario: string;
  /** Where `-o` writes; the cable-report plugin writes its sidecar beside it. */
  output: string;
  overrides?: Record<string, unknown>;
  environment?: string;
  /** The child's whole environment (secrets included); never logged. */
  env: NodeJS.ProcessEnv;
  /** Receives the child's stdout and stderr, line by line, already redacted. */
  logFile: string;
  echo: Writable;
  redact: (line: string) => string;
  /** Called with the child so the caller can forward SIGTERM from ECS. */
  onSpawn?: (child: ChildProcess) => void;
}

export interface ArtilleryOutcome {
  exitCode: number | null;
  signal: NodeJS.Signals | null;
}

/** The artillery CLI from node_modules: the pinned devDependency locally, the image's copy on Fargate. */
export function artilleryBin(): string {
  const pkgFile = require.resolve("artillery/package.json");
  const pkg = JSON.parse(readFileSync(pkgFile, "utf8")) as { bin: Record<string, string> };
  return path.join(path.dirname(pkgFile), pkg.bin.artillery);
}

export function artilleryArgs(run: Pick<ArtilleryRun, "scenario" | "output" | "overrides" | "environment">): string[] {
  const args = ["run", run.scenario, "--output", run.output];
  if (run.environment) args.push("--environment", run.environment);
  if (run.overrides) args.push("--overrides", JSON.stringify(run.overrides));
  return args;
}

export async function runArtillery(run: ArtilleryRun): Promise<ArtilleryOutcome> {
  const child = spawn(process.execPath, [artilleryBin(), ...artilleryArgs(run)], {
    cwd: path.dirname(run.scenario),
    env: run.env,
    stdio: ["ignore", "pipe", "pipe"],
  });
  run.onSpawn?.(child);
  const log = createWriteStream(run.logFile);
  const copyLines = (stream: NodeJS.ReadableStream) =>
    new Promise<void>((resolve) => {
      const lines = createInterface({ input: stream, crlfDelay: Infinity });
      lines.on("line", (line) => {
        const clean = run.redact(line) + "\n";
        log.write(clean);
        run.echo.write(clean);
      });
      lines.on("close", resolve);
    });
  const outcome = new Promise<ArtilleryOutcome>((resolve, reject) => {
    child.once("error", reject);
    child.once("exit", (exitCode, signal) => resolve({ exitCode, signal }));
  });
  const [result] = await Promise.all([outcome, copyLines(child.stdout), copyLines(child.stderr)]);
  await new Promise<void>((resolve, reject) => log.end((err?: Error | null) => (err ? reject(err) : resolve())));
  return result;
}

/**
 * SIGTERM, then SIGKILL if the child has not exited `graceMs` later: a stop that always ends, even
 * when Artillery's graceful shutdown hangs (a stuck plugin, a worker thread that never yields).
 */
export function terminate(child: ChildProcess, graceMs: number, log: (line: string) => void): void {
  const running = () => child.exitCode === null && child.signalCode === null;
  if (!running()) return;
  child.kill("SIGTERM");
  const timer = setTimeout(() => {
    if (!running()) return;
    log(`artillery did not exit within ${Math.round(graceMs / 1000)} s of SIGTERM; sending SIGKILL`);
    child.kill("SIGKILL");
  }, graceMs);
  timer.unref();
  child.once("exit", () => clearTimeout(timer));
}
