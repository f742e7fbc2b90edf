// The worker's tests (its entrypoint), infra's image test (the staged entrypoint) and cable-fanout's
// (its CLI, which starts that entrypoint) run a Node script the same way.
import { type ChildProcess, spawn } from "node:child_process";

export interface NodeRun {
  /** null when the script was killed (e.g. by the timeout). */
  code: number | null;
  stdout: string;
  stderr: string;
}

export interface NodeRunOptions {
  env?: NodeJS.ProcessEnv;
  cwd?: string;
  /** SIGKILL after this long; the run then resolves with code null. */
  timeoutMs: number;
  /** For tests that signal the child while it runs. */
  onSpawn?: (child: ChildProcess) => void;
}

/** Runs `node <script> <args…>` with this Node and collects its output; never rejects for a non-zero exit. */
export function runNode(script: string, args: string[], options: NodeRunOptions): Promise<NodeRun> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [script, ...args], { cwd: options.cwd, env: options.env ?? process.env, stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (d) => (stdout += d));
    child.stderr.on("data", (d) => (stderr += d));
    const timer = setTimeout(() => child.kill("SIGKILL"), options.timeoutMs);
    child.once("error", reject);
    child.once("close", (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
    options.onSpawn?.(child);
  });
}

/** The environment a spawned worker gets in tests: this process's PATH etc., without AWS or CABLE_ leftovers. */
export function cleanEnv(extra: Record<string, string>): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith("CABLE_") && !k.startsWith("AWS_")) env[k] = v;
  return { ...env, ARTILLERY_DISABLE_TELEMETRY: "true", ...extra };
}
