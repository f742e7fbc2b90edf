// --history through the real CLI with --local: real Artillery against the local target, whose
// broadcasts are held back 40 ms (a server with a known latency), then 52 ms (30% slower). The first
// run starts the history; the second, with too few comparable runs for a band, is gated against the
// newest one; with ten comparable runs the third, 30% slower, fails against the band; a run of a
// feature branch is judged against main's band and kept as its own; `cable-report trend` draws the
// main runs and says what it left out. (S3 on moto: history-moto.test.ts; the A/A and slowdown
// rates over many runs: bench/history-aa.mjs.)
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { runNode } from "cable-test-servers";
import { startTarget, type LocalTarget } from "cable-local-target";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runCli } from "./cli";

const ROOT = path.resolve(__dirname, "../../..");
const CHAT = path.join(ROOT, "scenarios/chat.yml");
const REPORT_BIN = path.join(ROOT, "packages/cable-report/bin/cable-report.js");
const LOAD = JSON.stringify({ config: { phases: [{ duration: 4, arrivalRate: 3 }] } });
const MAIN = { GITHUB_REF_NAME: "main", GITHUB_HEAD_REF: "", GITHUB_SHA: "0123456789abcdef0123456789abcdef01234567" };

type Json = Record<string, any>;
const json = (file: string) => JSON.parse(readFileSync(file, "utf8")) as Json;

describe("cable-fanout run --history (local)", () => {
  let target: LocalTarget;
  let work: string;

  beforeAll(async () => {
    target = await startTarget({ port: 0, faults: { broadcastDelayMs: 40 } });
    work = mkdtempSync(path.join(os.tmpdir(), "cable-history-"));
  });
  afterAll(async () => {
    await target.close();
    rmSync(work, { recursive: true, force: true });
  });

  it("starts the history, gates against the newest run, then against the band; a 30% slowdown fails; trend draws it", async () => {
    const history = path.join(work, "history");
    const out = path.join(work, "results");
    const run = async (extra: string[], env: Record<string, string> = MAIN) => {
      const result = await runCli(["run", CHAT, "--local", "--regions", "local", "--target", target.cableUrl, "--overrides", LOAD, "--start-delay", "1", "--out", out, "--history", history, ...extra], { cwd: work, env, timeoutMs: 120_000 });
      const runDir = path.dirname(result.stdout.trim());
      return { ...result, runDir, report: result.stdout.trim() ? readFileSync(result.stdout.trim(), "utf8") : "" };
    };
    const records = () => readdirSync(history).filter((f) => f.endsWith(".json")).sort();

    const first = await run([]);
    expect(first.code, first.stderr).toBe(0);
    expect(first.report).toContain("compared with nothing: this run starts it");
    expect(first.stderr).toMatch(/history: this run kept as .*history\/\d{8}T\d{6}Z-[\w-]+\.json/);
    expect(records()).toHaveLength(1);
    const kept = json(path.join(first.runDir, "history.json"));
    expect(kept).toMatchObject({ format: "cable-history-run", run: { kind: "run", branch: "main", commit: MAIN.GITHUB_SHA, regions: ["local"], tasksPerRegion: 1, target: { url: target.cableUrl } }, verdict: { state: "ok" } });
    expect(kept.results.all.histograms["cable.broadcast_latency"].sketch).toEqual(expect.any(String));
    expect(json(path.join(first.runDir, "fanout.json")).history).toMatchObject({ location: history, bandBranch: "main", scenarioHash: kept.run.scenario.hash });

    const second = await run(["--fail-on-regression", "10%"]);
    expect(second.code, second.stderr).toBe(0);
    expect(second.report).toContain(`- **Baseline:** the newest comparable run in the history (run ${kept.run.id}`);
    expect(second.report).toContain("1 comparable run (same scenario, load and target, branch main); a band needs 8");
    expect(records()).toHaveLength(2);

    // Eight more nights like the second run: ten comparable runs, a band.
    const like = json(path.join(second.runDir, "history.json"));
    for (let i = 1; i <= 8; i++) {
      const copy = { ...like, run: { ...like.run, id: `night-${i}`, at: like.run.at - i * 86_400_000 } };
      writeFileSync(path.join(history, `2026010${i}T000000Z-night-${i}.json`), JSON.stringify(copy));
    }
    // A record that is not one is said and skipped; the rest are used.
    writeFileSync(path.join(history, "20260109T000000Z-torn.json"), "{\"format\":");

    target.setFaults({ broadcastDelayMs: 52 });
    const slow = await run(["--fail-on-regression", "10%"]);
    expect(slow.code, slow.stderr).toBe(1);
    expect(slow.report).toMatch(/- \*\*History:\*\* `[^`]+`: judged against the band of the last 10 comparable runs — ❌ \*\*\d+ figures? above (its|their) band\*\*/);
    expect(slow.report).toMatch(/\| Broadcast latency p50 \| all regions \| [\d.]+ ms \| [\d.]+ ms · [\d.]+ ms \| [▁▂▃▄▅▆▇█]{10} [▁▂▃▄▅▆▇█] \| ❌ above the band/);
    expect(slow.report).toContain("1 history record skipped: 20260109T000000Z-torn.json (not JSON");
    expect(slow.stderr).toMatch(/regression: Broadcast latency p50 in local: /);
    const slowKept = json(path.join(slow.runDir, "history.json"));
    expect(slowKept.verdict).toMatchObject({ state: "failed", regressions: expect.any(Number) });
    expect(slowKept.verdict.regressions).toBeGreaterThan(0);

    target.setFaults({ broadcastDelayMs: 40 });
    const feature = await run(["--fail-on-regression", "10%"], { ...MAIN, GITHUB_HEAD_REF: "feature/faster-cable" });
    expect(feature.code, feature.stderr).toBe(0);
    expect(feature.report).toMatch(/judged against the band of the last 11 comparable runs — no regression beyond its band/);
    expect(json(path.join(feature.runDir, "history.json")).run.branch).toBe("feature/faster-cable");

    const trendMd = path.join(work, "trend.md");
    const trend = await runNode(REPORT_BIN, ["trend", history, "--out", trendMd, "--html", path.join(work, "trend.html")], { cwd: work, env: process.env, timeoutMs: 30_000 });
    expect(trend.code, trend.stderr).toBe(0);
    expect(trend.stderr).toContain('history record "20260109T000000Z-torn.json" skipped: not JSON');
    const markdown = readFileSync(trendMd, "utf8");
    expect(markdown).toMatch(/- \*\*Runs:\*\* 11 on main/);
    expect(markdown).toContain("- **Left out:** 1 run of another branch than main");
    expect(markdown).toContain("### Broadcast latency p95");
    expect(markdown).toContain("xychart-beta");
  }, 240_000);
});
