import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { S3Client } from "@aws-sdk/client-s3";
import { afterEach, describe, expect, it } from "vitest";
import { spawn } from "node:child_process";
import { artilleryArgs, terminate } from "../src/artillery";
import { readWorkerConfig } from "../src/config";
import { bundleKeyPattern, bundlePrefix, regionResultsPrefix, resultKeyPattern, resultPrefix } from "../src/layout";
import { LocalStore } from "../src/local-store";
import { parseManifest, taskOverrides } from "../src/manifest";
import { envSecretValues, makeRedactor, redactFile, redactJson, redactorFromEnv } from "../src/redact";
import { openStore } from "../src/open-store";
import { discoverTaskId } from "../src/task-id";

describe("the store layout", () => {
  it("puts bundles and results where the IAM patterns allow", () => {
    expect(bundlePrefix("r1")).toBe("runs/r1/bundle/");
    expect(resultPrefix("r1", "eu-west-2", "t1")).toBe("runs/r1/eu-west-2/t1/");
    const asRegex = (pattern: string) => new RegExp(`^${pattern.replace(/\*/g, ".*")}$`);
    expect(bundlePrefix("r1") + "run.json").toMatch(asRegex(bundleKeyPattern()));
    expect(resultPrefix("r1", "eu-west-2", "t1") + "status.json").toMatch(asRegex(resultKeyPattern("eu-west-2")));
    expect(resultPrefix("r1", "us-east-1", "t1") + "status.json").not.toMatch(asRegex(resultKeyPattern("eu-west-2")));
  });

  it("holds every task of a region under one prefix, the one the runner collects", () => {
    expect(regionResultsPrefix("r1", "eu-west-2")).toBe("runs/r1/eu-west-2/");
    expect(resultPrefix("r1", "eu-west-2", "t1").startsWith(regionResultsPrefix("r1", "eu-west-2"))).toBe(true);
  });
});

describe("readWorkerConfig", () => {
  const base = { CABLE_RUN_ID: "r1", CABLE_REGION: "eu-west-2", CABLE_STORE: "s3://b" };
  it("reads the contract with defaults", () => {
    expect(readWorkerConfig(base, "/tmp/w")).toEqual({ runId: "r1", region: "eu-west-2", taskId: undefined, store: "s3://b", secrets: {}, envSecrets: [], workDir: "/tmp/w", maxStartWaitMs: 600_000, selfStopGraceMs: 30_000, slice: undefined });
    expect(readWorkerConfig({ ...base, CABLE_SECRET_ENV: "SESSION_COOKIE, API_TOKEN" }, "/w").envSecrets).toEqual(["SESSION_COOKIE", "API_TOKEN"]);
    expect(() => readWorkerConfig({ ...base, CABLE_SECRET_ENV: "OK,bad-name" }, "/w")).toThrow('CABLE_SECRET_ENV: "bad-name" is not an environment variable name');
    expect(readWorkerConfig({ ...base, CABLE_SECRETS: '{"PUSHER_SECRET":"/cable-loadtest/app/secret"}', CABLE_MAX_START_WAIT_MS: "5000" }, "/w")).toMatchObject({
      secrets: { PUSHER_SECRET: "/cable-loadtest/app/secret" },
      maxStartWaitMs: 5000,
    });
  });
  it("rejects secret maps that are not env-var names to references", () => {
    expect(() => readWorkerConfig({ ...base, CABLE_SECRETS: '{"bad-name":"/x"}' }, "/w")).toThrow("CABLE_SECRETS: bad-name: must be a valid environment variable name");
    expect(() => readWorkerConfig({ ...base, CABLE_SECRETS: '{"OK":""}' }, "/w")).toThrow("CABLE_SECRETS: OK: must name a parameter or secret");
  });
});

describe("parseManifest and taskOverrides", () => {
  it("accepts a full manifest and rejects unknown fields, naming the file", () => {
    const m = parseManifest(JSON.stringify({ scenario: "a/b.yml", startAt: 1, overrides: { config: {} }, environment: "staging", env: { A: "1" }, secrets: { S: "/cable-loadtest/s" } }), "run.json");
    expect(m.scenario).toBe("a/b.yml");
    expect(() => parseManifest('{"scenario":"a.yml","startat":1}', "x/run.json")).toThrow("x/run.json is invalid: Unrecognized key(s) in object: 'startat'");
    expect(() => parseManifest("{", "x/run.json")).toThrow("x/run.json is not valid JSON");
  });
  it("switches the report and live plugins on, keeping the manifest's other overrides and plugin options", () => {
    expect(taskOverrides(undefined)).toEqual({ config: { plugins: { "cable-report": {}, "cable-live": {} } } });
    expect(taskOverrides({ config: { target: "ws://x", plugins: { ensure: {} } }, scenarios: [] })).toEqual({
      config: { target: "ws://x", plugins: { "cable-report": {}, "cable-live": {}, ensure: {} } },
      scenarios: [],
    });
    expect(taskOverrides({ config: { plugins: { "cable-report": { option: 1 } } } })).toEqual({ config: { plugins: { "cable-report": { option: 1 }, "cable-live": {} } } });
  });
  it("passes overrides and environment to artillery run", () => {
    expect(artilleryArgs({ scenario: "/b/s.yml", output: "/r/report.json", environment: "prod", overrides: { a: 1 } })).toEqual([
      "run", "/b/s.yml", "--output", "/r/report.json", "--environment", "prod", "--overrides", '{"a":1}',
    ]);
  });
});

describe("terminate: a self-stop that always ends", () => {
  it("sends SIGKILL to a child that ignores SIGTERM once the grace passes, and only then", async () => {
    // A real process that shrugs off SIGTERM, as an Artillery whose shutdown hangs would.
    const child = spawn(process.execPath, ["-e", "process.on('SIGTERM', () => console.log('ignored')); console.log('up'); setInterval(() => {}, 1000)"], { stdio: ["ignore", "pipe", "ignore"] });
    let out = "";
    child.stdout!.on("data", (d) => (out += d));
    for (let i = 0; i < 100 && !out.includes("up"); i++) await new Promise((r) => setTimeout(r, 50));
    const logs: string[] = [];
    const exited = new Promise<NodeJS.Signals | null>((resolve) => child.once("exit", (_code, signal) => resolve(signal)));
    const sentAt = Date.now();
    terminate(child, 1_500, (l) => logs.push(l));
    for (let i = 0; i < 40 && !out.includes("ignored"); i++) await new Promise((r) => setTimeout(r, 50));
    expect(out).toContain("ignored");
    expect(child.exitCode === null && child.signalCode === null).toBe(true);
    expect(await exited).toBe("SIGKILL");
    expect(Date.now() - sentAt).toBeGreaterThanOrEqual(1_400);
    expect(logs).toEqual(["artillery did not exit within 2 s of SIGTERM; sending SIGKILL"]);
  });

  it("leaves a child that exits on SIGTERM alone", async () => {
    const child = spawn(process.execPath, ["-e", "setInterval(() => {}, 1000)"], { stdio: "ignore" });
    await new Promise((r) => setTimeout(r, 200));
    const logs: string[] = [];
    const exited = new Promise<NodeJS.Signals | null>((resolve) => child.once("exit", (_code, signal) => resolve(signal)));
    terminate(child, 500, (l) => logs.push(l));
    expect(await exited).toBe("SIGTERM");
    await new Promise((r) => setTimeout(r, 700));
    expect(logs).toEqual([]);
  });
});

describe("makeRedactor", () => {
  it("hides every occurrence of every secret, longest first, and leaves other text alone", () => {
    const redact = makeRedactor(["abc", "abcdef", ""]);
    expect(redact("x abcdef y abc z")).toBe("x *** y *** z");
    expect(makeRedactor([])("abc")).toBe("abc");
  });

  it("hides a secret as JSON quotes it, URL-encodes it, or the engine cleans it, and the start of one cut off at the end", () => {
    const redact = makeRedactor(['se"cret \\ cookie\tvalue']);
    expect(redact(`said ${JSON.stringify('se"cret \\ cookie\tvalue')}`)).toBe('said "***"');
    expect(redact(`?c=${encodeURIComponent('se"cret \\ cookie\tvalue')}&x=1`)).toBe("?c=***&x=1");
    expect(redact('cookie: se"cret \\ cookie value')).toBe("cookie: ***");
    // The engine keeps 160 characters of the server's words and ends them with "…".
    expect(redact('the server said: your cookie se"cret \\ coo…')).toBe("the server said: your cookie ***…");
    expect(redact("a long refusal that ends in something else…")).toBe("a long refusal that ends in something else…");
  });

  it("redacts a JSON value's strings and keys, never its numbers", () => {
    const redact = makeRedactor(["1234", "hunter2"]);
    expect(redactJson({ count: 1234, "errors.hunter2": 1, words: [{ text: "pw hunter2 1234" }] }, redact)).toEqual({ count: 1234, "errors.***": 1, words: [{ text: "pw *** ***" }] });
  });

  it("redacts a results file in place, JSON as JSON, text as text, and leaves a file without a secret byte for byte", async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), "redact-"));
    try {
      const redact = makeRedactor(["hunter2"]);
      await writeFile(path.join(dir, "a.json"), '{\n  "n": 2,\n  "text": "pw hunter2"\n}\n');
      await writeFile(path.join(dir, "b.log"), "pw hunter2\n");
      await writeFile(path.join(dir, "c.json"), '{\n  "n": 2\n}\n');
      await writeFile(path.join(dir, "d.json"), '{"text": "pw hunter2", "cut');
      for (const f of ["a.json", "b.log", "c.json", "d.json"]) await redactFile(path.join(dir, f), redact);
      expect(JSON.parse(await readFile(path.join(dir, "a.json"), "utf8"))).toEqual({ n: 2, text: "pw ***" });
      expect(await readFile(path.join(dir, "b.log"), "utf8")).toBe("pw ***\n");
      expect(await readFile(path.join(dir, "c.json"), "utf8")).toBe('{\n  "n": 2\n}\n');
      expect(await readFile(path.join(dir, "d.json"), "utf8")).toBe('{"text": "pw ***", "cut');
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it("knows the local backend's secrets by the names CABLE_SECRET_ENV gives, in the worker and in Artillery", () => {
    expect(envSecretValues(["A", "B"], { A: "1", B: "2", C: "3" })).toEqual({ A: "1", B: "2" });
    expect(() => envSecretValues(["A", "MISSING"], { A: "1" })).toThrow("secret MISSING (CABLE_SECRET_ENV) is not set in the worker's environment");
    expect(redactorFromEnv({ CABLE_SECRET_ENV: "A,B", A: "alpha-secret", B: "beta-secret", C: "gamma" })("alpha-secret beta-secret gamma")).toBe("*** *** gamma");
    expect(redactorFromEnv({})("alpha")).toBe("alpha");
  });
});

describe("openStore", () => {
  let dir: string | undefined;
  afterEach(() => (dir ? rm(dir, { recursive: true, force: true }) : undefined));
  const deps = { s3Client: () => new S3Client({ region: "eu-west-2" }) };

  it("chooses the backend by scheme", () => {
    expect(openStore("s3://my-bucket/some/prefix/", deps).location).toBe("s3://my-bucket/some/prefix");
    expect(openStore("s3://my-bucket", deps).location).toBe("s3://my-bucket");
    expect(openStore("file:///tmp/store", deps).location).toBe("/tmp/store");
    expect(openStore("relative/dir", deps).location).toBe(path.resolve("relative/dir"));
    expect(() => openStore("gs://bucket", deps)).toThrow('CABLE_STORE: unsupported scheme in "gs://bucket"');
    expect(() => openStore("s3://Bad_Bucket", deps)).toThrow('"Bad_Bucket" is not a valid S3 bucket name');
  });

  it("keeps a local store's keys inside its directory", async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), "cable-local-store-"));
    const store = new LocalStore(dir);
    const file = path.join(dir, "f.txt");
    await writeFile(file, "x");
    await store.putFile("runs/r/eu/t/a/b.txt", file);
    expect(await store.list("runs/r/")).toEqual(["runs/r/eu/t/a/b.txt"]);
    expect(await store.list("runs/none/")).toEqual([]);
    await expect(store.putFile("runs/../../escape.txt", file)).rejects.toThrow("escapes");
  });

  it("writes and reads small text objects under the same keys", async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), "cable-local-store-"));
    const store = new LocalStore(dir);
    await store.putText("runs/r/bundle/run.json", '{"scenario":"s.yml"}\n');
    expect(await store.getText("runs/r/bundle/run.json")).toBe('{"scenario":"s.yml"}\n');
    expect(await store.list("runs/r/")).toEqual(["runs/r/bundle/run.json"]);
    await expect(store.putText("../escape.json", "{}")).rejects.toThrow("escapes");
  });
});

describe("discoverTaskId", () => {
  it("takes the ECS task id from the v4 metadata endpoint", async () => {
    const fetchFn = (async (url: string) => {
      expect(url).toBe("http://169.254.170.2/v4/abc/task");
      return new Response(JSON.stringify({ TaskARN: "arn:aws:ecs:eu-west-2:123456789012:task/cluster-name/0123456789abcdef0123456789abcdef" }));
    }) as typeof fetch;
    expect(await discoverTaskId({ ECS_CONTAINER_METADATA_URI_V4: "http://169.254.170.2/v4/abc" }, fetchFn)).toBe("0123456789abcdef0123456789abcdef");
  });
  it("makes up a distinct id elsewhere", async () => {
    const a = await discoverTaskId({});
    expect(a).toMatch(/^local-[0-9a-f]{12}$/);
    expect(await discoverTaskId({})).not.toBe(a);
  });
});
