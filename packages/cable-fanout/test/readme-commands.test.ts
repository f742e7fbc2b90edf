import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { CloudFormationClient } from "@aws-sdk/client-cloudformation";
import { CreateUserCommand, IAMClient } from "@aws-sdk/client-iam";
import { PutParameterCommand, SSMClient } from "@aws-sdk/client-ssm";
import { startTarget, type LocalTarget } from "cable-local-target";
import { withMachineLock, startMoto, type Moto } from "cable-test-servers";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { describeRegionStack } from "../src/aws/discovery";
import { emulateEcs } from "./ecs-emulator";
import { deployStack, holdTasksRunning, synthesizeTemplates } from "./moto";

// The READMEs' AWS commands as a person pastes them: every ```sh block of infra/README.md's first-run
// guide and of the root README's "From several AWS regions", run literally with bash (placeholders
// filled in) against moto, the real CDK CLI, the real AWS CLI and the real cable-fanout, in order.
// Where a command cannot go further here, it must fail only for a reason a real account and machine
// would not have (no ECR registry to push the image to, a service moto does not serve), each named
// below; anything else fails the test. moto stands in for the account (held to AWS's documented
// request limits: strict-aws), test/ecs-emulator.ts for Fargate.
const ROOT = path.resolve(__dirname, "../../..");
const ACCOUNT = "123456789012";
const REGIONS = ["eu-west-2", "us-east-1"];

/** The ```sh blocks under a heading, up to the next heading of the same level. */
export function shellBlocks(markdown: string, heading: string): string[] {
  const start = markdown.indexOf(`${heading}\n`);
  if (start < 0) throw new Error(`no heading "${heading}"`);
  const level = heading.slice(0, heading.indexOf(" ") + 1);
  const next = markdown.indexOf(`\n${level}`, start + heading.length);
  const section = markdown.slice(start, next < 0 ? undefined : next);
  return [...section.matchAll(/^( *)```sh\n([\s\S]*?)^\1```$/gm)].map(([, indent, body]) =>
    body
      .split("\n")
      .map((line) => (line.startsWith(indent) ? line.slice(indent.length) : line))
      .join("\n")
      .trim(),
  );
}

/**
 * Why a command may stop short here and not in a real account: each reason is this machine's or
 * moto's, with the output that proves it.
 */
const NOT_HERE: Array<{ command: RegExp; output: RegExp; why: string }> = [
  {
    command: /^npx cdk deploy /,
    // With a docker CLI and no registry to reach (this machine), no daemon, or no docker CLI at all.
    output: /docker login .*(no such host|dial tcp)|Cannot connect to the Docker daemon|spawn docker ENOENT|docker: command not found|Failed to find and execute '[^']*docker' while attempting to build a container asset/,
    why: "the image is built and pushed to the bootstrap's ECR registry, which moto does not serve and this machine cannot reach",
  },
  {
    command: /^aws service-quotas get-service-quota /,
    output: /NoSuchResourceException.*not available in the current Region/,
    why: "moto serves no Fargate quotas (the runner's own quota check warns and goes on, as it does when a quota cannot be read)",
  },
  {
    command: /^aws iam get-role --role-name AWSServiceRoleForECS /,
    output: /EntityAlreadyExists.*AWSServiceRoleForecs/,
    why: "moto names ECS's service-linked role AWSServiceRoleForecs, so the guard that finds AWS's AWSServiceRoleForECS misses it on a second paste",
  },
];

interface Ran {
  command: string;
  code: number | null;
  output: string;
}

describe("the READMEs' AWS commands, as written (moto, the CDK CLI, the AWS CLI)", () => {
  let moto: Moto;
  let target: LocalTarget;
  let cwdFile: string;
  const ran: Ran[] = [];
  const createdRuns: string[] = [];

  beforeAll(async () => {
    moto = await startMoto();
    expect(await holdTasksRunning(moto)).toBe(true);
    target = await startTarget({ port: 0 });
    cwdFile = path.join(mkdtempSync(path.join(os.tmpdir(), "cable-readme-")), "cwd");
    // What the reader already has: an IAM user to give the operator policy to.
    await new IAMClient({ region: "us-east-1" }).send(new CreateUserCommand({ UserName: "operator" }));
  }, 120_000);
  afterAll(async () => {
    await target?.close();
    await moto?.stop();
    for (const runId of createdRuns) rmSync(path.join(ROOT, "results", runId), { recursive: true, force: true });
  });

  const fill = (block: string, runId?: string) => {
    const filled = block
      .replaceAll("<account>", ACCOUNT)
      .replaceAll("<you>", "operator")
      .replaceAll("<your app secret>", target.pusher.secret)
      .replaceAll("wss://<your server>/cable", target.cableUrl)
      .replaceAll("wss://ws.example.com", target.url)
      .replaceAll("<runId>", runId ?? "<runId>");
    const left = filled.match(/<[a-z][a-zA-Z ]*>/g);
    if (left) throw new Error(`a placeholder the test does not know: ${left.join(", ")} in\n${block}`);
    return filled;
  };

  /** Runs a block's lines in one bash, -e: stops at the first failing line, whose command it reports. */
  const runBlock = async (block: string, cwd: string, extraArgs = ""): Promise<{ cwd: string; failed?: Ran }> => {
    const env: NodeJS.ProcessEnv = { ...process.env, ...moto.env, AWS_DEFAULT_REGION: "eu-west-2", CDK_DISABLE_VERSION_CHECK: "1", CDK_DISABLE_CLI_TELEMETRY: "true", ARTILLERY_DISABLE_TELEMETRY: "true" };
    // One logical command per line (a trailing backslash continues it).
    const commands = block.replace(/\\\n\s*/g, "").split("\n").filter((l) => l.trim() !== "" && !l.trim().startsWith("#"));
    let here = cwd;
    // A `for … do … done` loop is one command.
    const joined: string[] = [];
    for (const line of commands) {
      if (joined.length > 0 && /^\s*for\b/.test(joined[joined.length - 1]) && !/\bdone\s*$/.test(joined[joined.length - 1])) joined[joined.length - 1] += `\n${line}`;
      else joined.push(line);
    }
    for (const command of joined) {
      const withArgs = extraArgs && command.startsWith("npx cable-fanout run ") ? `${command} ${extraArgs}` : command;
      // Asynchronous: the ECS emulator in this process must go on playing Fargate meanwhile.
      // The CDK CLI's build hook restages infra/image: one cdk at a time on this machine (synth-cli.test.ts too).
      const exclusive = command.startsWith("npx cdk ") ? <T>(fn: () => Promise<T>) => withMachineLock("cdk", fn) : <T>(fn: () => Promise<T>) => fn();
      const result = await exclusive(() => new Promise<{ status: number | null; output: string }>((resolve) => {
        const child = spawn("bash", ["-euo", "pipefail", "-c", `${withArgs}\npwd > ${cwdFile}`], { cwd: here, env, stdio: ["ignore", "pipe", "pipe"] });
        let output = "";
        child.stdout.on("data", (d) => (output += d));
        child.stderr.on("data", (d) => (output += d));
        const timer = setTimeout(() => child.kill("SIGKILL"), 300_000);
        child.on("close", (status) => {
          clearTimeout(timer);
          resolve({ status, output });
        });
      }));
      const entry: Ran = { command, code: result.status, output: result.output };
      ran.push(entry);
      if (result.status !== 0) return { cwd: here, failed: entry };
      here = readFileSync(cwdFile, "utf8").trim();
    }
    return { cwd: here };
  };

  /** A failure this machine or moto explains, or the test fails with the command's output. */
  const expectExplained = (failed: Ran) => {
    const reason = NOT_HERE.find((r) => r.command.test(failed.command) && r.output.test(failed.output.replace(/\n/g, " ")));
    expect(reason, `${failed.command} failed (${failed.code}) for a reason a real account would not fix:\n${failed.output.slice(-3000)}`).toBeDefined();
  };

  it("infra/README.md's first run, step by step, then the root README's blocks", async () => {
    const guide = shellBlocks(readFileSync(path.join(ROOT, "infra/README.md"), "utf8"), "## First run in a fresh AWS account, step by step");
    expect(guide.length).toBe(9);
    let cwd = ROOT;
    let runId = "";
    let ecs: Awaited<ReturnType<typeof emulateEcs>> | undefined;
    try {
      for (const raw of guide) {
        if (raw === "npm ci && npm run build") continue; // the checkout `npm test` runs in is built: reinstalling under running tests would break them
        const block = fill(raw, runId);
        if (block.startsWith("npx cable-fanout run ")) {
          // Fargate, played by real workers, for the stacks the deploy step left.
          const stacks = await Promise.all(REGIONS.map((r) => describeRegionStack(new CloudFormationClient({ region: r }), r)));
          ecs = await emulateEcs(stacks, moto.env, path.dirname(cwdFile));
        }
        const step = await runBlock(block, cwd);
        if (step.failed) {
          expectExplained(step.failed);
          if (/^npx cdk deploy /.test(step.failed.command)) {
            // The stacks as `cdk deploy` would have left them: the same synthesized templates, created by moto's CloudFormation.
            expect(step.failed.output).toContain("Synthesis time");
            for (const [region, template] of synthesizeTemplates(REGIONS)) expect(await deployStack(region, template)).toBe("CREATE_COMPLETE");
            // The rest of the block is `cd ..`.
            expect(block.split("\n").slice(block.split("\n").findIndex((l) => l.startsWith("npx cdk deploy")) + 1)).toEqual(["cd .."]);
            cwd = ROOT;
            continue;
          }
        }
        cwd = step.cwd;
        if (block.startsWith("npx cable-fanout run ")) {
          const out = ran[ran.length - 1].output;
          runId = /results\/([^/\s]+)\/report\.md/.exec(out)?.[1] ?? "";
          expect(runId, out.slice(-2000)).not.toBe("");
          createdRuns.push(runId);
          expect(existsSync(path.join(ROOT, "results", runId, "report.md"))).toBe(true);
          await ecs!.settled(30_000);
          await ecs!.stop();
          ecs = undefined;
        }
      }
    } finally {
      await ecs?.stop();
    }
    expect(cwd).toBe(ROOT);
    const commands = ran.map((r) => r.command.split(" ").slice(0, 3).join(" "));
    // Each step reached its AWS call: the service-linked role, bootstrap in both regions, the policy, secrets, the run, stop and collect.
    expect(ran.find((r) => r.command.startsWith("npx cdk bootstrap"))).toMatchObject({ code: 0 });
    for (const region of REGIONS) expect(ran.find((r) => r.command.startsWith("npx cdk bootstrap"))!.output).toContain(`Environment aws://${ACCOUNT}/${region} bootstrapped`);
    expect(ran.filter((r) => r.command.startsWith("aws iam attach-user-policy")).map((r) => r.code)).toEqual([0, 0]);
    expect(ran.filter((r) => r.command.startsWith("npx cable-fanout")).map((r) => [r.command.split(" ").slice(0, 3).join(" "), r.code])).toEqual([
      ["npx cable-fanout run", 0],
      ["npx cable-fanout stop", 0],
      ["npx cable-fanout collect", 0],
    ]);
    expect(commands).toContain("aws iam get-role");
    const report = readFileSync(path.join(ROOT, "results", runId, "report.md"), "utf8");
    for (const region of REGIONS) expect(report).toContain(region);

    // The root README: once per account (again: every line must bear a second paste), then a run.
    const root = shellBlocks(readFileSync(path.join(ROOT, "README.md"), "utf8"), "## From several AWS regions");
    expect(root.length).toBe(2);
    const once = fill(root[0]);
    // A fresh account's deploy needs the bootstrap first (the image is an asset), and ECS's role.
    const order = ["create-service-linked-role", "npx cdk bootstrap", "npx cdk deploy"].map((c) => once.indexOf(c));
    expect(order.every((at, i) => at >= 0 && (i === 0 || at > order[i - 1])), once).toBe(true);
    let rest = once.split("\n").filter((l) => l !== "npm ci && npm run build");
    for (;;) {
      const step = await runBlock(rest.join("\n"), cwd);
      cwd = step.cwd;
      if (!step.failed) break;
      expectExplained(step.failed);
      rest = rest.slice(rest.indexOf(step.failed.command) + 1);
      if (/^npx cdk deploy /.test(step.failed.command)) cwd = path.join(ROOT, "infra");
    }
    expect(cwd).toBe(ROOT);
    // The run's secret in each region, as the README says it must be.
    for (const region of REGIONS) {
      await new SSMClient({ region }).send(new PutParameterCommand({ Name: "/cable-loadtest/pusher-app-secret", Value: target.pusher.secret, Type: "SecureString", Overwrite: true }));
    }
    const stacks = await Promise.all(REGIONS.map((r) => describeRegionStack(new CloudFormationClient({ region: r }), r)));
    ecs = await emulateEcs(stacks, moto.env, path.dirname(cwdFile));
    try {
      // As written, but ten seconds of load instead of the scenario's 90 s at up to 100 users a second.
      const run = await runBlock(fill(root[1]), cwd, `--overrides '${JSON.stringify({ config: { phases: [{ duration: 10, arrivalRate: 2 }] } })}'`);
      expect(run.failed, run.failed?.output.slice(-3000)).toBeUndefined();
      const out = ran[ran.length - 1].output;
      const rootRun = /results\/([^/\s]+)\/report\.md/.exec(out)?.[1];
      expect(rootRun, out.slice(-2000)).toBeDefined();
      createdRuns.push(rootRun!);
      await ecs.settled(30_000);
    } finally {
      await ecs.stop();
    }
  }, 900_000);
});
