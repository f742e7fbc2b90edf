// The live feed and collect against a store that answers every request 20 ms late and counts
// what is in flight: a bounded number of requests at once, every file read once, finished period
// folders not listed again, and collect leaving out the live files of tasks that left a report.
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync } from "node:fs";
import { readFile, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { encoded } from "cable-test-servers";
import { endedKey, periodKey, phasesKey, resultPrefix, type LivePeriod, type Store } from "cable-worker/contract";
import { DownloadProgress, PROGRESS_EVERY_MS } from "../src/download-progress";
import { LiveFeed, RegionReader } from "../src/live/feed";
import pLimit from "p-limit";
import { REGION_CONCURRENCY } from "../src/store";
import { downloadRegionResults } from "../src/store";

const T0 = 1_700_000_000_000;
const LATENCY_MS = 20;

/** An S3 bucket in memory, each request 20 ms late; it counts requests in flight and reads per key. */
class SlowStore implements Store {
  readonly location = "memory://";
  readonly objects = new Map<string, string>();
  readonly reads = new Map<string, number>();
  readonly lists: string[] = [];
  inFlight = 0;
  maxInFlight = 0;

  private async request<T>(answer: () => T | Promise<T>): Promise<T> {
    this.inFlight++;
    this.maxInFlight = Math.max(this.maxInFlight, this.inFlight);
    try {
      await new Promise((resolve) => setTimeout(resolve, LATENCY_MS));
      return await answer();
    } finally {
      this.inFlight--;
    }
  }

  list(prefix: string): Promise<string[]> {
    this.lists.push(prefix);
    return this.request(() => [...this.objects.keys()].filter((k) => k.startsWith(prefix)).sort());
  }

  listFolders(prefix: string): Promise<string[]> {
    this.lists.push(prefix);
    return this.request(() => {
      const folders = new Set<string>();
      for (const key of this.objects.keys()) {
        const rest = key.startsWith(prefix) ? key.slice(prefix.length) : "";
        if (rest.includes("/")) folders.add(`${prefix}${rest.slice(0, rest.indexOf("/") + 1)}`);
      }
      return [...folders].sort();
    });
  }

  getText(key: string): Promise<string> {
    this.reads.set(key, (this.reads.get(key) ?? 0) + 1);
    return this.request(() => {
      const text = this.objects.get(key);
      if (text === undefined) throw new Error(`NoSuchKey: ${key}`);
      return text;
    });
  }

  async getToFile(key: string, file: string): Promise<void> {
    await writeFile(file, await this.getText(key));
  }

  async putText(key: string, text: string): Promise<void> {
    this.objects.set(key, text);
  }

  async putFile(key: string, file: string): Promise<void> {
    this.objects.set(key, await readFile(file, "utf8"));
  }
}

const period = (i: number, created = 1): LivePeriod => ({
  period: T0 + i * 10_000,
  counters: { "vusers.created": created, "cable.connections_open_period_peak": 1 },
  rates: {},
  histograms: { "cable.broadcast_latency": encoded([10, 20]), "cable.event_loop_lag": encoded([2]) },
  cpuPercent: 5,
});

/** `tasks` tasks of region eu that each sent `periods` periods and started their one phase. */
function streamed(store: SlowStore, tasks: number, periods: number): string[] {
  const ids = Array.from({ length: tasks }, (_, i) => `t${i}`);
  for (const id of ids) {
    store.objects.set(phasesKey("r1", "eu", id), JSON.stringify([{ index: 0, name: "load", startTime: T0 }]));
    for (let i = 0; i < periods; i++) store.objects.set(periodKey("r1", "eu", id, T0 + i * 10_000), JSON.stringify(period(i)));
  }
  return ids;
}

describe("the live feed's reads", () => {
  it("keep at most the bound in flight, read every period file once, and stop listing a period folder once every task sent it", async () => {
    const store = new SlowStore();
    streamed(store, 100, 3);
    const reader = new RegionReader(store, "r1", "eu", { expected: 100, phaseCount: 1, limit: pLimit(REGION_CONCURRENCY), now: () => T0 + 35_000 });
    const started = Date.now();
    await reader.poll();
    // 400 files and 6 listings at 20 ms: one at a time 8 s, 32 at a time well under one.
    expect(Date.now() - started).toBeLessThan(2_000);
    expect(store.maxInFlight).toBe(REGION_CONCURRENCY);
    expect([...store.reads.values()].every((n) => n === 1)).toBe(true);
    expect(store.reads.size).toBe(400);

    // One merged record per period, each task's file counted once; of each task only what is judged per task.
    const folds = reader.live.periods();
    expect(folds.map((f) => [f.period - T0, f.tasks.size, f.counters["vusers.created"]])).toEqual([
      [0, 100, 100],
      [10_000, 100, 100],
      [20_000, 100, 100],
    ]);
    expect(folds[0].sketches["cable.broadcast_latency"].count).toBe(200);
    expect(reader.live.tasks.get("t7")).toMatchObject({ lastPeriod: T0 + 20_000, phases: [{ index: 0 }] });

    // A task's fourth period and a new task's first: the finished folders are neither listed nor read again, nor are phases already complete.
    store.objects.set(periodKey("r1", "eu", "t0", T0 + 30_000), JSON.stringify(period(3)));
    store.lists.length = 0;
    store.reads.clear();
    await reader.poll();
    expect(store.lists.filter((p) => /\/live\/\d+\/$/.test(p))).toEqual([`runs/r1/eu/live/${T0 + 30_000}/`]);
    expect([...store.reads.keys()]).toEqual([periodKey("r1", "eu", "t0", T0 + 30_000)]);
    expect(reader.live.periods().at(-1)).toMatchObject({ period: T0 + 30_000, tasks: new Set(["t0"]) });
  });

  it("keep a period folder open while an expected task has not sent it, until it is long over", async () => {
    const store = new SlowStore();
    streamed(store, 2, 1);
    let now = T0 + 15_000;
    const reader = new RegionReader(store, "r1", "eu", { expected: 3, limit: pLimit(4), now: () => now });
    await reader.poll();
    store.lists.length = 0;
    await reader.poll();
    expect(store.lists).toContain(`runs/r1/eu/live/${T0}/`);
    // Phases are read at every poll while the phase count is unknown and the task has not ended.
    expect(store.reads.get(phasesKey("r1", "eu", "t0"))).toBe(2);
    store.objects.set(endedKey("r1", "eu", "t0"), JSON.stringify({ at: T0, created: 1, completed: 1, failed: 0 }));
    now = T0 + 10_000 + 30_001;
    await reader.poll();
    store.lists.length = 0;
    await reader.poll();
    expect(store.lists).not.toContain(`runs/r1/eu/live/${T0}/`);
    expect(reader.live.tasks.get("t0")?.ended).toMatchObject({ created: 1 });
    expect(store.reads.get(phasesKey("r1", "eu", "t0"))).toBe(3);
  });

  it("read a task's last period that lands after its ended marker, and leave alone a folder no period is spelt as", async () => {
    const store = new SlowStore();
    streamed(store, 2, 1);
    // t1 ended (the probe's marker) before its last period's file (the live plugin's) landed.
    store.objects.set(endedKey("r1", "eu", "t1"), JSON.stringify({ at: T0, created: 1, completed: 1, failed: 0 }));
    store.objects.delete(periodKey("r1", "eu", "t1", T0));
    store.objects.set(`runs/r1/eu/live/000${T0}/t0.live`, JSON.stringify(period(0)));
    let now = T0 + 15_000;
    const reader = new RegionReader(store, "r1", "eu", { expected: 2, phaseCount: 1, limit: pLimit(4), now: () => now });
    await reader.poll();
    store.objects.set(periodKey("r1", "eu", "t1", T0), JSON.stringify(period(0, 5)));
    now = T0 + 20_000;
    await reader.poll();
    expect(reader.live.periods().map((f) => [f.period - T0, f.tasks.size, f.counters["vusers.created"]])).toEqual([[0, 2, 6]]);
    expect(store.lists.filter((p) => p.includes("/000"))).toEqual([]);
  });

  it("polls every region at once, each with its own bound", async () => {
    const eu = new SlowStore();
    const us = new SlowStore();
    streamed(eu, 40, 1);
    for (const [key, value] of eu.objects) us.objects.set(key.replace("/eu/", "/us/"), value);
    const feed = new LiveFeed("r1", new Map([["eu", eu], ["us", us]]), { now: () => T0 + 60_000, sleep: async () => undefined }, { expected: 40, phaseCount: 1 });
    const live = await feed.refresh();
    expect([...live.values()].map((r) => [r.region, r.tasks.size, r.periods()[0].tasks.size])).toEqual([
      ["eu", 40, 40],
      ["us", 40, 40],
    ]);
    expect(eu.maxInFlight).toBe(REGION_CONCURRENCY);
    expect(us.maxInFlight).toBe(REGION_CONCURRENCY);
  });
});

describe("the live feed's end", () => {
  it("reads once more when the tasks have stopped, so their last periods are in, then wakes its readers and says it is final", async () => {
    const store = new SlowStore();
    streamed(store, 1, 1);
    const sleeps: number[] = [];
    // A poll every 2 s that never comes back on its own: only finish() reads again.
    const feed = new LiveFeed("r1", new Map([["eu", store]]), { now: () => T0 + 12_000, sleep: (ms) => (sleeps.push(ms), new Promise(() => undefined)) }, { expected: 1, phaseCount: 1 });
    feed.start();
    await feed.next();
    expect(feed.snapshot().get("eu")!.periods()).toHaveLength(1);
    // The task's last period lands as it exits, after the poll before.
    store.objects.set(periodKey("r1", "eu", "t0", T0 + 10_000), JSON.stringify(period(1)));
    store.objects.set(endedKey("r1", "eu", "t0"), JSON.stringify({ at: T0 + 12_000, created: 2, completed: 2, failed: 0 }));
    const woken = feed.next();
    expect(feed.final).toBe(false);
    const finishing = feed.finish();
    // Asked while the last read is under way, next() waits for that read: it does not resolve at
    // once (a caller looping on it would spin and starve the read's own I/O).
    const wokenMeanwhile = feed.next().then(() => feed.snapshot().get("eu")!.periods().length);
    const last = await finishing;
    await woken;
    expect(await wokenMeanwhile).toBe(2);
    expect(feed.final).toBe(true);
    await expect(Promise.race([feed.next().then(() => "at once"), new Promise((r) => setTimeout(() => r("waited"), 50))])).resolves.toBe("at once");
    expect(last.get("eu")!.periods().map((f) => f.period - T0)).toEqual([0, 10_000]);
    expect(last.get("eu")!.tasks.get("t0")).toMatchObject({ lastPeriod: T0 + 10_000, ended: { completed: 2 } });
    expect(sleeps).toEqual([2_000]);
  });
});

describe("the live feed's listeners", () => {
  it("go on being called, and the others with them, after one throws; the throw is said once", async () => {
    const store = new SlowStore();
    streamed(store, 1, 1);
    const warnings: string[] = [];
    let polls = 0;
    const feed = new LiveFeed("r1", new Map([["eu", store]]), { now: () => T0 + 12_000, sleep: async () => undefined, warn: (line) => warnings.push(line) }, { expected: 1, phaseCount: 1 });
    feed.onUpdate(() => {
      throw new TypeError("a page that cannot draw");
    });
    feed.onUpdate(() => polls++);
    await feed.refresh();
    await feed.refresh();
    expect(polls).toBe(2);
    expect(warnings).toEqual(["live figures: TypeError while reading a poll (a page that cannot draw); polling goes on"]);
  });
});

describe("collect's download", () => {
  let dir: string | undefined;
  afterEach(() => {
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it("downloads in parallel, and the live files only of tasks without a report, where the report reads them", async () => {
    const store = new SlowStore();
    const ids = streamed(store, 50, 2);
    const status = (taskId: string) => JSON.stringify({ runId: "r1", region: "eu", taskId, exitCode: 0, reason: null, artilleryExitCode: 0, startedAt: new Date(T0).toISOString(), endedAt: new Date(T0).toISOString(), startAt: null, loadStartedAt: null, startLagMs: null, firstMetricAt: null });
    for (const id of ids) {
      store.objects.set(`${resultPrefix("r1", "eu", id)}artillery.log`, "log");
      store.objects.set(`${resultPrefix("r1", "eu", id)}ready.json`, "{}");
      // Every task but t3 (stopped before Artillery wrote its report) left one.
      if (id !== "t3") store.objects.set(`${resultPrefix("r1", "eu", id)}report.json`, "{}");
    }
    store.objects.set(`${resultPrefix("r1", "eu", "t0")}status.json`, status("t0"));
    dir = mkdtempSync(path.join(os.tmpdir(), "cable-collect-"));
    const lines: string[] = [];
    let clock = 0;
    const progress = new DownloadProgress(1, (line) => lines.push(line), () => (clock += PROGRESS_EVERY_MS / 20));

    const { files, statuses } = await downloadRegionResults(store, "r1", "eu", dir, progress);

    expect(store.maxInFlight).toBe(REGION_CONCURRENCY);
    expect(statuses.map((s) => s.taskId)).toEqual(["t0"]);
    expect(files).toHaveLength(50 + 49 + 3);
    expect(readdirSync(path.join(dir, "t3", "live")).sort()).toEqual([`period-${T0}.live`, `period-${T0 + 10_000}.live`, "phases.live"]);
    expect(JSON.parse(readFileSync(path.join(dir, "t3", "live", `period-${T0 + 10_000}.live`), "utf8")).period).toBe(T0 + 10_000);
    expect(existsSync(path.join(dir, "t4", "live"))).toBe(false);
    expect(readdirSync(path.join(dir, "t4")).sort()).toEqual(["artillery.log", "report.json"]);
    // No live file of a task with a report was read, nor any ready marker.
    expect([...store.reads.keys()].filter((k) => k.includes("/live/") && !k.endsWith("/t3.live"))).toEqual([]);
    expect([...store.reads.keys()].filter((k) => k.endsWith("ready.json"))).toEqual([]);
    // A line at most every PROGRESS_EVERY_MS of its clock.
    expect(lines.length).toBeGreaterThan(0);
    expect(lines.length).toBeLessThanOrEqual(Math.ceil((files.length + statuses.length) / 20));
    expect(lines.at(-1)).toMatch(/^collect: [\d,]+ files, [\d.]+ MB downloaded, 0 of 1 region\(s\) done$/);
  });

  it("says nothing of a download done before its first line is due", () => {
    const lines: string[] = [];
    const progress = new DownloadProgress(2, (line) => lines.push(line), () => 0);
    progress.file(10);
    progress.regionDone();
    progress.regionDone();
    progress.finish();
    expect(lines).toEqual([]);
  });
});
