// --detach on the AWS backend, against moto: the synthesized stacks in two regions, real workers
// playing the Fargate tasks (test/ecs-emulator.ts), the real CLI. `run --detach` returns at the go
// and writes the run's record into both buckets (runs/<runId>/control/fanout.json); `status` lists
// the run in both regions from ECS (ListTasks, startedBy) and the record; `attach` from a fresh
// results directory, naming one region, reads the record from its bucket, waits for the tasks
// (which run past a 3 s heartbeat timeout: they watch none) and writes the report; `collect` from
// another, naming the other region, writes the same figures. Every S3 call the runner made is one
// its operator policy allows, as IAM holds it.
import { readFileSync } from "node:fs";
import path from "node:path";
import { GetObjectCommand, S3Client } from "@aws-sdk/client-s3";
import { describe, expect, it } from "vitest";
import { runCli } from "./cli";
import { emulateEcs } from "./ecs-emulator";
import { motoRecorder } from "./moto";
import { deniedCalls, motoRegions, RUNNER_KEY, s3Calls, TASK_KEY } from "./moto-regions";

const ROOT = path.resolve(__dirname, "../../..");
const CHAT = path.join(ROOT, "scenarios/chat.yml");
const REGIONS = ["eu-west-2", "us-east-1"];
const LOAD = JSON.stringify({ config: { phases: [{ duration: 12, arrivalRate: 1 }] } });

type Json = Record<string, any>;
const json = (file: string) => JSON.parse(readFileSync(file, "utf8")) as Json;

describe("cable-fanout run --detach on the AWS backend (moto)", () => {
  const aws = motoRegions(REGIONS, undefined, 120_000);

  it("leaves the record in both buckets; status lists the run; attach and collect from fresh directories read it and write the report", async () => {
    const { moto, work, target, stacks } = aws;
    const recorder = motoRecorder(moto);
    const ecs = await emulateEcs(stacks, { ...moto.env, AWS_ACCESS_KEY_ID: TASK_KEY }, work);
    const cli = (args: string[]) => runCli(args, { cwd: work, env: moto.env, timeoutMs: 150_000 });
    let runId: string;
    try {
      await recorder.start();
      const detached = await cli(["run", CHAT, "--regions", REGIONS.join(","), "--target", target.cableUrl, "--overrides", LOAD, "--start-delay", "1", "--heartbeat-timeout", "3s", "--out", path.join(work, "detached"), "--detach"]);
      expect(detached.code, detached.stderr).toBe(0);
      runId = detached.stdout.trim();
      expect(detached.stderr).toContain(`cable-fanout attach ${runId} --regions ${REGIONS.join(",")}`);

      // Each bucket holds the whole record.
      for (const stack of stacks) {
        const { Body } = await new S3Client({ region: stack.region }).send(new GetObjectCommand({ Bucket: stack.bucketName, Key: `runs/${runId}/control/fanout.json` }));
        const record = JSON.parse(await Body!.transformToString()) as Json;
        expect(record, stack.region).toMatchObject({ runId, backend: "aws", regions: REGIONS, count: 1, startAt: expect.any(Number), barrier: { outcome: "go" }, detached: { phasesMs: 12_000 } });
        expect(record.detached.live[stack.region]).toBe(`s3://${stack.bucketName} runs/${runId}/${stack.region}/live/`);
        expect(Object.keys(record.started).sort()).toEqual([...REGIONS].sort());
      }

      const status = await cli(["status", "--regions", REGIONS.join(","), "--out", path.join(work, "elsewhere")]);
      expect(status.code, status.stderr).toBe(0);
      for (const region of REGIONS) expect(status.stdout).toMatch(new RegExp(`^${region}\\s+${runId}\\s+\\d+:\\d\\d\\s+1\\s+0\\s+detached$`, "m"));

      const attachOut = path.join(work, "attached");
      const attached = await cli(["attach", runId, "--regions", REGIONS[0], "--out", attachOut]);
      expect(attached.code, `${attached.stderr}\n${[...ecs.tasks.values()].map((t) => t.output.slice(-2_000)).join("\n")}`).toBe(0);
      expect(attached.stderr).toContain(`attached to run ${runId}`);
      expect(attached.stdout.trim()).toBe(path.join(attachOut, runId, "report.md"));
      const record = json(path.join(attachOut, runId, "fanout.json"));
      expect(record.tasks.map((t: Json) => `${t.region} ${t.state}`)).toEqual(REGIONS.map((r) => `${r} ok`));
      const merged = json(path.join(attachOut, runId, "merged.json"));
      expect(merged.all.counters["vusers.created"]).toBe(24);

      const collectOut = path.join(work, "collected");
      const collected = await cli(["collect", runId, "--regions", REGIONS[1], "--out", collectOut]);
      expect(collected.code, collected.stderr).toBe(0);
      expect(json(path.join(collectOut, runId, "merged.json")).all.counters).toEqual(merged.all.counters);

      const after = await cli(["status", "--regions", REGIONS.join(","), "--out", path.join(work, "elsewhere")]);
      expect(after.stdout).not.toContain(runId);
      await recorder.stop();
    } finally {
      await ecs.stop();
    }
    // Every task ran to its phases' end, past the heartbeat timeout nobody beat for.
    for (const t of ecs.tasks.values()) expect(t.exitCode, t.output.slice(-2_000)).toBe(0);

    const s3 = s3Calls(await recorder.requests(), stacks);
    const runnerCalls = s3.filter((r) => r.signer === RUNNER_KEY);
    for (const stack of stacks) {
      const key = `arn:aws:s3:::${stack.bucketName}/runs/${runId!}/control/fanout.json`;
      expect(runnerCalls.some((r) => r.action === "s3:PutObject" && r.resource === key), stack.region).toBe(true);
    }
    expect(runnerCalls.some((r) => r.action === "s3:GetObject" && r.resource.endsWith(`/runs/${runId!}/control/fanout.json`))).toBe(true);
    const { denied } = await deniedCalls(s3, aws);
    expect(denied).toEqual([]);
  }, 300_000);
});
