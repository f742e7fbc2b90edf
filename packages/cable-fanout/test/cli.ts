import type { ChildProcess } from "node:child_process";
import path from "node:path";
import { type NodeRun, runNode } from "cable-test-servers";

const BIN = path.resolve(__dirname, "../bin/cable-fanout.js");

export interface CliOptions {
  cwd: string;
  /** Added to this process's environment. */
  env?: Record<string, string>;
  timeoutMs?: number;
  onSpawn?: (child: ChildProcess) => void;
}

/** The real `cable-fanout` CLI as a child process, Artillery's telemetry off. */
export function runCli(args: string[], options: CliOptions): Promise<NodeRun> {
  return runNode(BIN, args, {
    cwd: options.cwd,
    env: { ...process.env, ARTILLERY_DISABLE_TELEMETRY: "true", ...options.env },
    timeoutMs: options.timeoutMs ?? 90_000,
    onSpawn: options.onSpawn,
  });
}
