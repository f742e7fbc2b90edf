import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

/**
 * Runs `fn` while holding a lock shared by every test process on this machine. For tests that use
 * one place no test can have to itself: the CDK CLI's build hook rewrites infra/image on every
 * synth, so two tests running `cdk` at once would pull the directory from under each other. A lock
 * whose holder died is taken over; the wait is bounded.
 */
export async function withMachineLock<T>(name: string, fn: () => Promise<T> | T, waitMs = 10 * 60_000): Promise<T> {
  const dir = path.join(os.tmpdir(), `cable-lock-${name}`);
  const deadline = Date.now() + waitMs;
  for (;;) {
    try {
      mkdirSync(dir);
      writeFileSync(path.join(dir, "pid"), String(process.pid));
      break;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== "EEXIST") throw err;
      const holder = Number(readFileSafe(path.join(dir, "pid")));
      if (Number.isInteger(holder) && holder > 0 && !alive(holder)) {
        rmSync(dir, { recursive: true, force: true });
        continue;
      }
      if (Date.now() > deadline) throw new Error(`lock ${name} still held by process ${holder || "?"} after ${Math.round(waitMs / 1000)} s`);
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  }
  try {
    return await fn();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

function readFileSafe(file: string): string {
  try {
    return readFileSync(file, "utf8");
  } catch {
    return "";
  }
}
