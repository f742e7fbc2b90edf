import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { cpuPercent } from "artillery-plugin-cable-report";
import { regionResultsPrefix, resultKeyPattern } from "../src/layout";
import { capacityStopKeyPattern, endedKey, periodKey, periodOfFolder, phasesKey, stopKey, taskOfLiveKey } from "../src/live-keys";
import { LocalStore } from "../src/local-store";
import { artilleryTaskEnv } from "../src/run-task";

const asRegex = (pattern: string) => new RegExp(`^${pattern.replace(/[.]/g, "\\.").replace(/\*/g, ".*")}$`);

describe("the capacity probe's live keys", () => {
  it("sit in the region's results, in region-level folders the runner lists a period at a time, where the task role may write them", () => {
    expect(periodKey("r1", "eu-west-2", "t1", 1_700_000_000_000)).toBe("runs/r1/eu-west-2/live/1700000000000/t1.live");
    expect(phasesKey("r1", "eu-west-2", "t1")).toBe("runs/r1/eu-west-2/live/phases/t1.live");
    expect(endedKey("r1", "eu-west-2", "t1")).toBe("runs/r1/eu-west-2/live/ended/t1.live");
    expect(periodOfFolder("runs/r1/eu-west-2/live/1700000000000/")).toBe(1_700_000_000_000);
    expect(periodOfFolder("runs/r1/eu-west-2/live/phases/")).toBeUndefined();
    for (const name of ["000", "01700000000000", "17000000000000000000", "1e12"]) expect(periodOfFolder(`runs/r1/eu-west-2/live/${name}/`), name).toBeUndefined();
    expect(taskOfLiveKey(periodKey("r1", "eu-west-2", "t1", 1))).toBe("t1");
    for (const key of [periodKey("r1", "eu-west-2", "t1", 1_700_000_000_000), phasesKey("r1", "eu-west-2", "t1"), endedKey("r1", "eu-west-2", "t1")]) {
      expect(key.startsWith(regionResultsPrefix("r1", "eu-west-2"))).toBe(true);
      expect(key).toMatch(asRegex(resultKeyPattern("eu-west-2")));
      // Not *.json: the report merger reads every *.json of a task folder as an Artillery report.
      expect(key.endsWith(".json")).toBe(false);
    }
  });

  it("give each region one stop marker, which only that region's read pattern admits", () => {
    expect(stopKey("r1", "eu-west-2")).toBe("runs/r1/eu-west-2/capacity-stop.live");
    expect(stopKey("r1", "eu-west-2")).toMatch(asRegex(capacityStopKeyPattern("eu-west-2")));
    expect(stopKey("r1", "us-east-1")).not.toMatch(asRegex(capacityStopKeyPattern("eu-west-2")));
    expect(periodKey("r1", "eu-west-2", "t1", 1)).not.toMatch(asRegex(capacityStopKeyPattern("eu-west-2")));
  });

  it("are looked for by listing the marker's own key, in a directory as in S3: an empty list until it is written", async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), "cable-stop-"));
    try {
      const store = new LocalStore(dir);
      const marker = stopKey("r1", "eu-west-2");
      expect(await store.list(marker)).toEqual([]);
      await store.putText(periodKey("r1", "eu-west-2", "t1", 1), "{}");
      expect(await store.list(marker)).toEqual([]);
      await store.putText(marker, "{}");
      expect(await store.list(marker)).toEqual([marker]);
      // A key below a file is no key at all.
      expect(await store.list(`${marker}/x`)).toEqual([]);
      // The folders right below a prefix, as S3 lists them with the delimiter "/".
      expect(await store.listFolders("runs/r1/eu-west-2/")).toEqual(["runs/r1/eu-west-2/live/"]);
      expect(await store.listFolders("runs/r1/eu-west-2/live/")).toEqual(["runs/r1/eu-west-2/live/1/"]);
      expect(await store.listFolders("runs/r2/")).toEqual([]);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe("the live periods' generator CPU (cable-report's, which the live plugin and the sidecar share)", () => {
  const sample = (cpuMs: number, at: number) => ({ usage: { user: cpuMs * 700, system: cpuMs * 300 }, at });

  it("is the process's CPU over the period as a percent of the workers' cores, to 0.1 (cable-report's CpuMeter)", () => {
    // 15 s of CPU in 10 s of wall time over 3 worker cores: half of them.
    expect(cpuPercent(sample(1_000, 0), sample(16_000, 10_000), 3)).toBe(50);
    expect(cpuPercent(sample(0, 0), sample(1_234, 10_000), 1)).toBe(12.3);
    // Several cores' worth on one worker core reads above 100: a saturated generator, not a clamp.
    expect(cpuPercent(sample(0, 0), sample(20_000, 10_000), 1)).toBe(200);
  });

  it("has no figure under a second of wall time", () => {
    expect(cpuPercent(sample(0, 0), sample(500, 999), 1)).toBeNull();
  });
});

describe("Artillery's environment in a task", () => {
  it("puts the worker's own directory on the plugin path and says which task this is, which variables hold secrets, and that the runner judges failed users", () => {
    const env = artilleryTaskEnv({ ARTILLERY_PLUGIN_PATH: "/opt/plugins", CABLE_SECRET_ENV: "STALE" }, { runId: "r1", region: "eu-west-2", taskId: "abc123", store: "s3://bucket" }, ["PUSHER_APP_SECRET", "SESSION_COOKIE"]);
    expect(env).toEqual({
      ARTILLERY_PLUGIN_PATH: `/opt/plugins:${path.resolve(__dirname, "../src")}`,
      CABLE_RUN_ID: "r1",
      CABLE_REGION: "eu-west-2",
      CABLE_TASK_ID: "abc123",
      CABLE_STORE: "s3://bucket",
      CABLE_SECRET_ENV: "PUSHER_APP_SECRET,SESSION_COOKIE",
      // The runner judges config.cable.maxFailedUsers on the merged run: a task's own Artillery leaves it.
      CABLE_FAILED_USERS_JUDGED_BY_RUNNER: "1",
    });
    expect(artilleryTaskEnv({}, { runId: "r1", region: "eu-west-2", taskId: "abc123", store: "/tmp/store" }, []).ARTILLERY_PLUGIN_PATH).toBe(path.resolve(__dirname, "../src"));
  });
});
