import { mkdirSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { expect, test } from "vitest";
import { withMachineLock } from "../src/index.js";

test("holders take turns, and a lock whose holder died is taken over", async () => {
  const name = `test-${process.pid}`;
  const events: string[] = [];
  const hold = (id: string) =>
    withMachineLock(name, async () => {
      events.push(`${id} in`);
      await new Promise((r) => setTimeout(r, 300));
      events.push(`${id} out`);
    });
  await Promise.all([hold("a"), hold("b")]);
  expect([events.slice(0, 2), events.slice(2)].map((pair) => pair.map((e) => e.split(" ")[1]))).toEqual([["in", "out"], ["in", "out"]]);

  // A holder that died without releasing: pid 2^22 + 1 is beyond Linux's pid_max.
  const stale = path.join(os.tmpdir(), `cable-lock-${name}`);
  mkdirSync(stale);
  writeFileSync(path.join(stale, "pid"), String(2 ** 22 + 1));
  expect(await withMachineLock(name, () => "taken", 2_000)).toBe("taken");
});
