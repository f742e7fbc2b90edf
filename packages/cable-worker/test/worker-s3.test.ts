import { CreateBucketCommand, GetObjectCommand, ListObjectsV2Command, PutObjectCommand, S3Client } from "@aws-sdk/client-s3";
import { CreateSecretCommand, SecretsManagerClient } from "@aws-sdk/client-secrets-manager";
import { PutParameterCommand, SSMClient } from "@aws-sdk/client-ssm";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { cleanEnv, type Moto, startMoto } from "cable-test-servers";
import { httpBundle, requireBuiltWorker, runWorker, startRecordingServer } from "./helpers";

// The real entrypoint against moto's S3, SSM and Secrets Manager: what a Fargate task does, minus Fargate.
describe("worker entrypoint against S3 (moto)", () => {
  let moto: Moto;
  let s3: S3Client;
  let server: Awaited<ReturnType<typeof startRecordingServer>>;
  let secretArn: string;
  const bucket = "cable-loadtest-test";

  beforeAll(async () => {
    requireBuiltWorker();
    [moto, server] = await Promise.all([startMoto({ region: "eu-west-2" }), startRecordingServer()]);
    const clientConfig = { endpoint: moto.endpoint, region: "eu-west-2", forcePathStyle: true, credentials: { accessKeyId: "testing", secretAccessKey: "testing" } };
    s3 = new S3Client(clientConfig);
    await s3.send(new CreateBucketCommand({ Bucket: bucket, CreateBucketConfiguration: { LocationConstraint: "eu-west-2" } }));
    await new SSMClient(clientConfig).send(new PutParameterCommand({ Name: "/cable-loadtest/test/token", Value: "s3cr3t-token-value", Type: "SecureString" }));
    const secret = await new SecretsManagerClient(clientConfig).send(new CreateSecretCommand({ Name: "cable-loadtest/test/cookie", SecretString: "session=abc123xyz" }));
    secretArn = secret.ARN!;
  });
  afterAll(async () => {
    await Promise.all([moto?.stop(), server?.close()]);
  });

  const bodyOf = async (key: string) => (await s3.send(new GetObjectCommand({ Bucket: bucket, Key: key }))).Body!.transformToString();

  it("runs a task from an S3 bundle, resolves secrets into artillery's environment only, redacts them, and uploads results", async () => {
    const bundle = httpBundle({
      secretVars: ["API_TOKEN", "SESSION_COOKIE"],
      extraManifest: { overrides: { config: { target: server.url } }, secrets: { SESSION_COOKIE: secretArn } },
    });
    for (const [rel, body] of Object.entries(bundle)) {
      await s3.send(new PutObjectCommand({ Bucket: bucket, Key: `prefix/runs/s3run/bundle/${rel}`, Body: body }));
    }
    const before = server.requests.length;

    const result = await runWorker(
      cleanEnv({
        ...moto.env,
        CABLE_RUN_ID: "s3run",
        CABLE_REGION: "eu-west-2",
        CABLE_TASK_ID: "abc123",
        CABLE_STORE: `s3://${bucket}/prefix`,
        CABLE_SECRETS: JSON.stringify({ API_TOKEN: "/cable-loadtest/test/token" }),
      }),
    );

    expect(result.stderr).toContain(`[cable-worker] done: results in s3://${bucket}/prefix/`);
    expect(result.code).toBe(0);
    // The secret reached the target…
    const sent = server.requests.slice(before);
    expect(sent.map((h) => h["x-api_token"])).toEqual(["s3cr3t-token-value", "s3cr3t-token-value", "s3cr3t-token-value"]);
    expect(sent.map((h) => h["x-session_cookie"])).toEqual(["session=abc123xyz", "session=abc123xyz", "session=abc123xyz"]);
    // …but neither the task's output nor anything uploaded carries it.
    expect(result.stdout + result.stderr).not.toMatch(/s3cr3t-token-value|abc123xyz/);
    expect(result.stdout).toContain("API_TOKEN is ***");
    expect(result.stdout).toContain("SESSION_COOKIE is ***");
    const listed = await s3.send(new ListObjectsV2Command({ Bucket: bucket, Prefix: "prefix/runs/s3run/eu-west-2/abc123/" }));
    const keys = (listed.Contents ?? []).map((o) => o.Key!.slice("prefix/runs/s3run/eu-west-2/abc123/".length)).sort();
    expect(keys).toEqual(["artillery.log", "report.json", "report.json.sketches.json", "status.json"]);
    // The live plugin's periods and phases, written while the task ran into the region's live folder (and checked for secrets below, with the rest).
    const live = await s3.send(new ListObjectsV2Command({ Bucket: bucket, Prefix: "prefix/runs/s3run/eu-west-2/live/" }));
    const liveKeys = (live.Contents ?? []).map((o) => o.Key!.slice("prefix/runs/s3run/eu-west-2/".length));
    expect(liveKeys).toEqual(expect.arrayContaining(["live/phases/abc123.live", expect.stringMatching(/^live\/\d+\/abc123\.live$/)]));
    for (const key of [...keys.map((k) => `abc123/${k}`), ...liveKeys]) expect(await bodyOf(`prefix/runs/s3run/eu-west-2/${key}`)).not.toMatch(/s3cr3t-token-value|abc123xyz/);
    expect(await bodyOf("prefix/runs/s3run/eu-west-2/abc123/artillery.log")).toContain("API_TOKEN is ***");
    const report = JSON.parse(await bodyOf("prefix/runs/s3run/eu-west-2/abc123/report.json"));
    expect(report.aggregate.counters["http.codes.200"]).toBe(3);
    const status = JSON.parse(await bodyOf("prefix/runs/s3run/eu-west-2/abc123/status.json"));
    expect(status).toMatchObject({ exitCode: 0, reason: null, taskId: "abc123" });
  });

  it("fails with exit 2, naming the variable and the parameter, when a secret cannot be read; still uploads status.json", async () => {
    await s3.send(new PutObjectCommand({ Bucket: bucket, Key: "runs/nosecret/bundle/run.json", Body: JSON.stringify({ scenario: "s.yml" }) }));
    await s3.send(new PutObjectCommand({ Bucket: bucket, Key: "runs/nosecret/bundle/s.yml", Body: "config: {}\nscenarios: []\n" }));

    const result = await runWorker(
      cleanEnv({
        ...moto.env,
        CABLE_RUN_ID: "nosecret",
        CABLE_REGION: "eu-west-2",
        CABLE_TASK_ID: "t1",
        CABLE_STORE: `s3://${bucket}`,
        CABLE_SECRETS: JSON.stringify({ PUSHER_SECRET: "/cable-loadtest/test/missing" }),
      }),
    );

    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/FAILED \(exit 2\): secret PUSHER_SECRET \(\/cable-loadtest\/test\/missing\) could not be read: ParameterNotFound/);
    const status = JSON.parse(await bodyOf("runs/nosecret/eu-west-2/t1/status.json"));
    expect(status.exitCode).toBe(2);
    expect(status.reason).toContain("secret PUSHER_SECRET");
  });

  it("names the bucket when the store cannot be reached", async () => {
    const result = await runWorker(cleanEnv({ ...moto.env, CABLE_RUN_ID: "r", CABLE_REGION: "eu-west-2", CABLE_TASK_ID: "t", CABLE_STORE: "s3://no-such-bucket-here" }));
    expect(result.code).toBe(2);
    expect(result.stderr).toMatch(/fetching the bundle from s3:\/\/no-such-bucket-here\/runs\/r\/bundle\/ failed: .*bucket/i);
    expect(result.stderr).toMatch(/uploading results failed|uploading status.json failed/);
  });
});
