// --history stack on the AWS backend, against moto: the synthesized stacks in two regions, real
// workers playing the Fargate tasks (test/ecs-emulator.ts), the real CLI. The first run finds no
// history and starts it (one record under history/ in the first region's bucket, history.json beside
// report.md); the second is judged against the first (the two-run comparison, the band needing more
// runs) and adds its own record; `cable-report trend` reads both back from S3, and says which record
// it skipped when a torn one lies among them. Every S3 call the runner made, the history's among
// them, is one its operator policy allows, as IAM holds it; the tasks made none under history/.
import { existsSync, readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { GetObjectCommand, ListObjectsV2Command, PutObjectCommand, S3Client } from "@aws-sdk/client-s3";
import { runNode } from "cable-test-servers";
import { HISTORY_PREFIX } from "cable-worker/contract";
import { describe, expect, it } from "vitest";
import { runCli } from "./cli";
import { emulateEcs } from "./ecs-emulator";
import { motoRecorder } from "./moto";
import { deniedCalls, motoRegions, RUNNER_KEY, s3Calls, TASK_KEY } from "./moto-regions";

const ROOT = path.resolve(__dirname, "../../..");
const CHAT = path.join(ROOT, "scenarios/chat.yml");
const CABLE_REPORT = path.join(ROOT, "packages/cable-report/bin/cable-report.js");
const REGIONS = ["eu-west-2", "us-east-1"];
const LOAD = JSON.stringify({ config: { phases: [{ duration: 10, arrivalRate: 1 }] } });
// Where the run came from, as GitHub Actions says it: the records name branch main and this commit.
const OWN_KEY = "HISTORYTESTSELF";
const SOURCE = { GITHUB_REF_NAME: "main", GITHUB_SHA: "0123456789abcdef0123456789abcdef01234567" };

type Json = Record<string, any>;
const json = (file: string) => JSON.parse(readFileSync(file, "utf8")) as Json;
const day = (at: number) => new Date(at).toISOString().slice(0, 10);

describe("cable-fanout run --history stack on the AWS backend (moto)", () => {
  const aws = motoRegions(REGIONS, undefined, 120_000);

  it("keeps one record per run under history/ of the first region's bucket, judges the second run against the first, and cable-report trend reads them back", async () => {
    const { moto, work, target, stacks } = aws;
    const bucket = stacks.find((s) => s.region === REGIONS[0])!.bucketName;
    // The test's own look into the buckets signs with a key of its own, so that the recording keeps it apart from the runner's.
    const self = (region: string) => new S3Client({ region, credentials: { accessKeyId: OWN_KEY, secretAccessKey: "testing" } });
    const s3 = self(REGIONS[0]);
    const historyKeys = async () => {
      const { Contents = [] } = await s3.send(new ListObjectsV2Command({ Bucket: bucket, Prefix: `${HISTORY_PREFIX}/` }));
      return Contents.map((o) => o.Key!).sort();
    };
    const recorder = motoRecorder(moto);
    const ecs = await emulateEcs(stacks, { ...moto.env, AWS_ACCESS_KEY_ID: TASK_KEY }, work);
    const out = path.join(work, "results");
    const cli = (args: string[]) => runCli(args, { cwd: work, env: { ...moto.env, ...SOURCE }, timeoutMs: 150_000 });
    const run = async (extra: string[]) => {
      const before = existsSync(out) ? readdirSync(out) : [];
      const result = await cli(["run", CHAT, "--regions", REGIONS.join(","), "--target", target.cableUrl, "--overrides", LOAD, "--start-delay", "1", "--out", out, "--history", "stack", ...extra]);
      expect(result.code, `${result.stderr}\n${[...ecs.tasks.values()].map((t) => t.output.slice(-2_000)).join("\n")}`).toBe(0);
      const [runId] = readdirSync(out).filter((d) => !d.startsWith(".") && !before.includes(d));
      expect(runId, result.stderr).toBeDefined();
      return { runId, runDir: path.join(out, runId), stderr: result.stderr };
    };
    let first: Awaited<ReturnType<typeof run>>;
    let second: Awaited<ReturnType<typeof run>>;
    try {
      await recorder.start();

      // Run 1: no history yet; the run starts it.
      first = await run([]);
      const report1 = readFileSync(path.join(first.runDir, "report.md"), "utf8");
      expect(report1).toContain("### Against the history");
      expect(report1).toContain("this run starts it");
      const kept1 = json(path.join(first.runDir, "history.json"));
      const keys1 = await historyKeys();
      expect(keys1).toHaveLength(1);
      expect(first.stderr).toContain(`history: this run kept as s3://${bucket}/${keys1[0]}`);
      const { Body } = await s3.send(new GetObjectCommand({ Bucket: bucket, Key: keys1[0] }));
      const record1 = JSON.parse(await Body!.transformToString()) as Json;
      expect(record1).toEqual(kept1);
      expect(record1.format).toBe("cable-history-run");
      expect(record1.run).toMatchObject({ id: first.runId, branch: "main", commit: SOURCE.GITHUB_SHA });
      expect([...record1.run.regions].sort()).toEqual([...REGIONS].sort());
      expect(JSON.stringify(record1.results.regions)).toContain(REGIONS[0]);
      expect(JSON.stringify(record1.results.regions)).toContain(REGIONS[1]);
      // No record in the other region's bucket.
      const other = stacks.find((s) => s.region === REGIONS[1])!.bucketName;
      const { Contents: elsewhere = [] } = await self(REGIONS[1]).send(new ListObjectsV2Command({ Bucket: other, Prefix: `${HISTORY_PREFIX}/` }));
      expect(elsewhere).toEqual([]);

      // Run 2: one comparable run, too few for a band: the newest is the two-run baseline.
      second = await run(["--fail-on-regression", "50%"]);
      const report2 = readFileSync(path.join(second.runDir, "report.md"), "utf8");
      expect(report2).toContain("### Against the history");
      expect(report2).toContain(`- **Baseline:** the newest comparable run in the history (run ${first.runId}`);
      expect(existsSync(path.join(second.runDir, "history.json"))).toBe(true);
      const keys2 = await historyKeys();
      expect(keys2).toHaveLength(2);
      expect(keys2).toContain(keys1[0]);
    } finally {
      await ecs.stop();
    }
    for (const t of ecs.tasks.values()) expect(t.exitCode, t.output.slice(-2_000)).toBe(0);

    // The trend, from S3, by the built bin, with moto's environment.
    const trend = (args: string[]) => runNode(CABLE_REPORT, ["trend", `s3://${bucket}/${HISTORY_PREFIX}/`, ...args], { cwd: work, env: { ...process.env, ...moto.env }, timeoutMs: 60_000 });
    const at = [first!, second!].map((r) => json(path.join(r.runDir, "history.json")).run.at as number);
    const everyBranch = await trend(["--out", path.join(work, "trend.md"), "--html", path.join(work, "trend.html"), "--all-branches"]);
    expect(everyBranch.code, everyBranch.stderr).toBe(0);
    expect(everyBranch.stderr).not.toContain("skipped");
    const md = readFileSync(path.join(work, "trend.md"), "utf8");
    expect(md).toContain(`- **Runs:** 2 (every branch), ${day(at[0])} to ${day(at[1])}; the newest ${second!.runId}`);
    expect(existsSync(path.join(work, "trend.html"))).toBe(true);
    const onMain = await trend(["--out", path.join(work, "trend-main.md")]);
    expect(onMain.code, onMain.stderr).toBe(0);
    expect(readFileSync(path.join(work, "trend-main.md"), "utf8")).toContain("- **Runs:** 2 on main");

    // A torn record among them spoils only itself: the trend still reads the two and says which it skipped.
    await s3.send(new PutObjectCommand({ Bucket: bucket, Key: `${HISTORY_PREFIX}/20990101T000000Z-torn.json`, Body: "{" }));
    const torn = await trend(["--out", path.join(work, "trend-torn.md"), "--all-branches"]);
    expect(torn.code, torn.stderr).toBe(0);
    expect(torn.stderr).toContain('history record "20990101T000000Z-torn.json" skipped: not JSON');
    expect(readFileSync(path.join(work, "trend-torn.md"), "utf8")).toContain("- **Runs:** 2 (every branch)");
    await recorder.stop();

    // Every S3 call of the runner (and of the trend, with the same credentials), the history's
    // included, is one its operator policy allows; no task touched history/.
    const calls = s3Calls(await recorder.requests(), stacks).filter((r) => r.signer !== OWN_KEY);
    expect(new Set(calls.map((r) => r.signer))).toEqual(new Set([RUNNER_KEY, TASK_KEY]));
    const runnerCalls = calls.filter((r) => r.signer === RUNNER_KEY);
    const historyArn = `arn:aws:s3:::${bucket}/${HISTORY_PREFIX}/`;
    expect(runnerCalls.some((r) => r.action === "s3:ListBucket" && r.resource === `arn:aws:s3:::${bucket}` && r.context["s3:prefix"] === `${HISTORY_PREFIX}/`)).toBe(true);
    expect(runnerCalls.filter((r) => r.action === "s3:PutObject" && r.resource.startsWith(historyArn))).toHaveLength(2);
    expect(runnerCalls.some((r) => r.action === "s3:GetObject" && r.resource.startsWith(historyArn))).toBe(true);
    const taskCalls = calls.filter((r) => r.signer === TASK_KEY);
    expect(taskCalls.length).toBeGreaterThan(0);
    expect(taskCalls.filter((r) => r.resource.includes(`/${HISTORY_PREFIX}/`) || (r.context["s3:prefix"] ?? "").startsWith(HISTORY_PREFIX))).toEqual([]);
    const { denied } = await deniedCalls(calls, aws);
    expect(denied).toEqual([]);
  }, 300_000);
});
