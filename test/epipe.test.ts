import { spawn } from "node:child_process";
import path from "node:path";
import { describe, expect, it } from "vitest";

// `cable-fanout run --help | head`: the reader closes the pipe before the CLI is done writing. Each
// CLI must end quietly then (exit 0, nothing on stderr), as Unix tools do, not with an unhandled
// EPIPE. The read end is closed before the CLI writes at all, so every run meets the closed pipe.
const ROOT = path.resolve(__dirname, "..");
const CLIS: Array<[string, string[]]> = [
  ["packages/cable-fanout/bin/cable-fanout.js", ["run", "--help"]],
  ["packages/cable-report/bin/cable-report.js", ["--help"]],
  ["packages/cable-action/bin/cable-action.js", ["--help"]],
];

function closedStdout(bin: string, args: string[]): Promise<{ code: number | null; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [path.join(ROOT, bin), ...args], { cwd: ROOT, stdio: ["ignore", "pipe", "pipe"] });
    child.stdout.destroy();
    let stderr = "";
    child.stderr.on("data", (d) => (stderr += d));
    const timer = setTimeout(() => child.kill("SIGKILL"), 20_000);
    child.on("close", (code) => {
      clearTimeout(timer);
      resolve({ code, stderr });
    });
  });
}

describe("a closed stdout", () => {
  it.each(CLIS)("%s %s ends quietly", async (bin, args) => {
    const { code, stderr } = await closedStdout(bin, args);
    expect(stderr).not.toMatch(/EPIPE|Unhandled/);
    expect(code).toBe(0);
  });
});
