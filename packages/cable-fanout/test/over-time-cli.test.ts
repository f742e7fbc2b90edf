import { mkdtempSync, readFileSync, readdirSync, rmSync } from "node:fs";
import { createServer, type Server } from "node:http";
import os from "node:os";
import path from "node:path";
import { startTarget, type LocalTarget } from "cable-local-target";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runCli } from "./cli";

// What happened when, through the real CLI with --local and two regions: scenarios/spike.yml, scaled
// down, against the local target with a known capacity (above 50 open connections every broadcast
// is delivered 400 ms late). The spike phase takes the two regions past it, the phases around it
// stay under it: the merged series must read low, high, low; the live lines print while it runs;
// --abort-on stops the same run in the spike.
const ROOT = path.resolve(__dirname, "../../..");
const SPIKE = path.join(ROOT, "scenarios/spike.yml");
// Per task; two regions of one task each: ~20 connections, then ~100, then ~20 again (10 s sessions).
const PHASES = JSON.stringify({
  config: {
    // cable-report's own ensure condition on the recovery verdict, judged on the merged run.
    plugins: { "cable-report": { ensure: ["recovery < 60s"] } },
    phases: [
      { name: "normal", duration: 30, arrivalRate: 1 },
      { name: "spike", duration: 20, arrivalRate: 5 },
      { name: "recovery", duration: 50, arrivalRate: 1 },
    ],
  },
});
const DELAY_MS = 400;
// A broadcast held DELAY_MS, as a sketch reads it: percentiles are within 1 %, so 401 ms can read 399.5.
const LATE = DELAY_MS * 0.99;
/** Deliveries stay late this long after the overload ends: the recovery's known truth. */
const LINGER_MS = 20_000;
const WATCH_MS = 100;

const json = (file: string) => JSON.parse(readFileSync(file, "utf8"));
const runDirOf = (out: string) => path.join(out, readdirSync(out).filter((d) => !d.startsWith("."))[0]);

describe("cable-fanout run --local, over time", () => {
  let target: LocalTarget;
  let work: string;
  // The server's own figures for --server-metrics: a Prometheus text endpoint whose CPU counter
  // grows by 0.25 s a second (the parser is held against real anycable-go's in capacity-server-metrics.test.ts).
  let metrics: Server;
  let metricsUrl: string;
  const metricsStart = Date.now();

  beforeAll(async () => {
    target = await startTarget({ port: 0, faults: { capacityConnections: 50, overCapacityDelayMs: DELAY_MS, overCapacityLingerMs: LINGER_MS } });
    work = mkdtempSync(path.join(os.tmpdir(), "cable-fanout-over-time-"));
    metrics = createServer((_req, res) => {
      const cpu = ((Date.now() - metricsStart) / 1000) * 0.25;
      res.end(`# TYPE process_cpu_seconds_total counter\nprocess_cpu_seconds_total ${cpu}\n# TYPE process_resident_memory_bytes gauge\nprocess_resident_memory_bytes ${64 * 2 ** 20}\n`);
    });
    await new Promise<void>((resolve) => metrics.listen(0, "127.0.0.1", resolve));
    metricsUrl = `http://127.0.0.1:${(metrics.address() as { port: number }).port}/metrics`;
  });
  afterAll(async () => {
    await target.close();
    await new Promise((resolve) => metrics.close(resolve));
    rmSync(work, { recursive: true, force: true });
  });

  it("merges the tasks' periods into series that show the spike as low, high, low, and prints live lines per region", async () => {
    const out = path.join(work, "spike");
    // The truth: the last moment the target held more than its capacity (+ the linger).
    let overloadEnd = 0;
    const watch = setInterval(() => {
      if (target.counters().cableConnections > 50) overloadEnd = Date.now();
    }, WATCH_MS);
    const result = await runCli(["run", SPIKE, "--local", "--regions", "local-a,local-b", "--target", target.cableUrl, "--overrides", PHASES, "--start-delay", "2", "--out", out, "--server-metrics", metricsUrl], { cwd: work, timeoutMs: 180_000 });
    clearInterval(watch);
    expect(result.code, result.stderr).toBe(0);
    const runDir = runDirOf(out);
    const merged = json(path.join(runDir, "merged.json"));

    expect(merged.version).toBe(3);
    expect(merged.timeline.phases.map((p: { name: string }) => p.name)).toEqual(["normal", "spike", "recovery"]);
    const spikeStart = merged.timeline.phases[1].startTime;
    const spikeEnd = merged.timeline.phases[2].startTime;
    const { periods, latency } = merged.all.series;
    const p95: Array<number | null> = latency["cable.broadcast_latency"].p95;
    const starting = (from: number, to: number) => periods.flatMap((t: number, i: number) => (t >= from && t < to && p95[i] !== null ? [p95[i]] : []));
    // Whole periods before the spike; those that start while it (and its users' 10 s sessions) last;
    // those that start once the spike's last sessions have ended.
    const before = starting(periods[0], spikeStart - 10_000);
    const during = starting(spikeStart, spikeEnd + 10_000);
    const after = starting(spikeEnd + 20_000 + LINGER_MS, Infinity);
    expect(before.length).toBeGreaterThan(0);
    expect(during.length).toBeGreaterThan(0);
    expect(after.length).toBeGreaterThan(0);
    expect(Math.max(...before), `before the spike: ${before}`).toBeLessThan(DELAY_MS / 2);
    expect(Math.max(...during), `in the spike: ${during}`).toBeGreaterThan(LATE);
    expect(Math.max(...after), `after the spike: ${after}`).toBeLessThan(DELAY_MS / 2);
    // Every region has its own series on the same grid, and the counts add up to the totals.
    for (const region of merged.regions) {
      expect(region.series.periods.every((t: number) => t % 10_000 === 0)).toBe(true);
      const created = region.series.users.created.reduce((a: number, v: number | null) => a + (v ?? 0), 0);
      expect(created).toBe(region.counters["vusers.created"]);
    }
    expect(Math.max(...merged.all.series.connections.filter((c: number | null) => c !== null))).toBeGreaterThan(50);

    // The spike's verdict: p95 back when the target's penalty ended (its overload's end plus the
    // linger), within one 10 s period: the verdict is read at period starts, and a broadcast sent in
    // the penalty's last moment still arrives DELAY_MS late, possibly in the next period; the truth
    // is sampled every WATCH_MS.
    const [spike] = merged.verdicts.spikes;
    expect(spike).toMatchObject({ phase: "spike", rateBefore: 1, rate: 5, metric: "cable.broadcast_latency" });
    const truth = overloadEnd + LINGER_MS - spike.end;
    expect(truth).toBeGreaterThan(LINGER_MS);
    // On failure, the series the verdict was read from, on the spike's end's clock.
    const seen = (name: string, threshold: number | null) => {
      const column = name === "all regions" ? merged.all : merged.regions.find((r: { name: string }) => r.name === name);
      const s = column.series;
      const lag = (i: number) => s.generator.map((g: { lagP99: Array<number | null> }) => g.lagP99[i] ?? "–").join("/");
      const at = s.periods.map((t: number, i: number) => `${Math.round((t - spike.end) / 1000)}s: p95 ${s.latency["cable.broadcast_latency"].p95[i]} lag ${lag(i)}`);
      return `${name}: truth ${truth} ms, threshold ${threshold} ms; ${at.join(", ")}`;
    };
    for (const [name, c] of Object.entries(spike.columns) as Array<[string, { recoveredAfterMs: number | null; worst: number; threshold: number | null }]>) {
      expect(c.worst).toBeGreaterThan(LATE);
      expect(c.recoveredAfterMs, seen(name, c.threshold)).not.toBeNull();
      expect(Math.abs(c.recoveredAfterMs! - truth), `recovered after ${c.recoveredAfterMs} ms; ${seen(name, c.threshold)}`).toBeLessThanOrEqual(10_000 + DELAY_MS + WATCH_MS);
    }
    expect(merged.verdicts.checks).toEqual([{ check: "recovery < 60s", columns: expect.objectContaining({ "all regions": { passed: true, value: expect.stringMatching(/^"spike" recovered after \d+(\.\d)? s$/) } }) }]);
    expect(result.stderr).toMatch(/spike "spike" \d:\d\d–\d:\d\d \(5\/s after 1\/s\), all regions: cable.broadcast_latency p95 [\d.]+ ms before, worst [\d.]+ ms, back (at once|after \d+ s)/);

    // One line per region per period while it ran.
    const lines = result.stderr.split("\n").filter((l) => / · \d[\d,]* users active · /.test(l));
    expect(lines.filter((l) => l.startsWith("local-a ")).length).toBeGreaterThanOrEqual(6);
    expect(lines.filter((l) => l.startsWith("local-b ")).length).toBeGreaterThanOrEqual(6);
    expect(lines.some((l) => / broadcast_latency p95 \d{3,}/.test(l))).toBe(true);
    expect(result.stderr).toMatch(/(✅|⚠️|❌) local-a ended · \d+ users/);

    const report = readFileSync(path.join(runDir, "report.md"), "utf8");
    expect(report).toContain("### Over time");
    expect(report).toContain("Phases: normal 0:");

    // The server's figures on the run's time axis: a sample every 5 s, 0.25 vCPU, 64 MiB.
    const server = merged.timeline.server;
    expect(server.at.length).toBeGreaterThanOrEqual(15);
    const vcpu = server.vcpu.filter((v: number | null) => v !== null);
    // 0.25 vCPU, give or take a slow scrape on a busy machine (the sample's time is taken before the request).
    expect(Math.min(...vcpu)).toBeGreaterThan(0.1);
    expect(Math.max(...vcpu)).toBeLessThan(0.5);
    expect(vcpu.reduce((a: number, b: number) => a + b, 0) / vcpu.length).toBeCloseTo(0.25, 1);
    expect(new Set(server.memoryMiB)).toEqual(new Set([64]));
    expect(report).toContain("**Server CPU (vCPU)**");
    expect(report).toContain("**Server memory (MiB)**");
    expect(readFileSync(path.join(runDir, "report.html"), "utf8")).toContain('"vcpu"');
  }, 200_000);

  it("--abort-on stops every task in the spike, keeps what they measured, says why, and exits 7", async () => {
    const out = path.join(work, "aborted");
    const result = await runCli(
      ["run", SPIKE, "--local", "--regions", "local-a,local-b", "--target", target.cableUrl, "--overrides", PHASES, "--start-delay", "2", "--out", out, "--abort-on", `cable.broadcast_latency.p95>${DELAY_MS / 2} for 10s`],
      { cwd: work, timeoutMs: 180_000 },
    );
    expect(result.code, result.stderr).toBe(7);
    expect(result.stderr).toMatch(/⛔ --abort-on cable.broadcast_latency.p95>200 for 10s: cable.broadcast_latency.p95 [\d,.]+ ms > 200 in 1 period/);
    const runDir = runDirOf(out);
    const record = json(path.join(runDir, "fanout.json"));
    expect(record.aborted.condition).toBe("cable.broadcast_latency.p95>200 for 10s");
    expect(record.tasks.map((t: { state: string }) => t.state)).toEqual(["aborted", "aborted"]);
    expect(record.regionFailures).toEqual({});
    const merged = json(path.join(runDir, "merged.json"));
    expect(merged.timeline.aborted.condition).toBe("cable.broadcast_latency.p95>200 for 10s");
    // Stopped in the spike, well before the recovery phase ended.
    expect(merged.timeline.aborted.at).toBeLessThan(merged.timeline.phases[1].startTime + 60_000);
    // Each task's figures up to the stop come from its live periods.
    expect(merged.all.counters["vusers.created"]).toBeGreaterThan(40);
    expect(merged.all.histograms["cable.broadcast_latency"].p99).toBeGreaterThan(LATE);
    const report = readFileSync(path.join(runDir, "report.md"), "utf8");
    expect(report).toMatch(/⛔ Stopped early at \d+:\d\d\*\* by `--abort-on cable.broadcast_latency.p95>200 for 10s`/);
    expect(report).toContain("stopped before Artillery wrote its report");
    expect(report).toMatch(/\d+ virtual user\(s\) were still in their flow when the tasks were stopped/);
  }, 200_000);
});
