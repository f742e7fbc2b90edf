import { mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { createHash } from "node:crypto";
import http from "node:http";
import type { AddressInfo, Socket } from "node:net";
import os from "node:os";
import path from "node:path";
import { GetObjectCommand, ListObjectsV2Command, S3Client } from "@aws-sdk/client-s3";
import { PutParameterCommand, SSMClient } from "@aws-sdk/client-ssm";
import { filesHolding } from "cable-test-servers";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runCli } from "./cli";
import { emulateEcs } from "./ecs-emulator";
import { motoRegions } from "./moto-regions";

// Secrets come back through the server: an Action Cable server that quotes the Cookie header in its
// disconnect reason puts the session cookie into the engine's sample of the server's words, Artillery's
// log, the sidecar, merged.json, report.md and report.html. A run with such a server, with --local
// (the secret from this environment) and on the AWS path against moto (the secret in SSM, real
// workers playing the Fargate tasks), and every output of the run searched for the value.
const SECRET = "Xq7.s3cr3t.Cook!e-v4lue";
const FORMS = [SECRET, encodeURIComponent(SECRET), JSON.stringify(SECRET).slice(1, -1)];
const PARAMETER = "/cable-loadtest/session-cookie";

/**
 * A server that refuses every connection, quoting the cookie it was sent: the WebSocket handshake
 * and three frames written by hand (a welcome, the disconnect, a close), which is all it says.
 */
async function startEchoingServer(): Promise<{ url: string; cookies: string[]; close: () => Promise<void> }> {
  const cookies: string[] = [];
  const sockets = new Set<Socket>();
  const frame = (opcode: number, text: string) => {
    const body = Buffer.from(text);
    return Buffer.concat([Buffer.from(body.length < 126 ? [0x80 | opcode, body.length] : [0x80 | opcode, 126, body.length >> 8, body.length & 0xff]), body]);
  };
  const server = http.createServer((_req, res) => res.writeHead(426).end());
  server.on("upgrade", (req, socket: Socket) => {
    cookies.push(req.headers.cookie ?? "");
    const accept = createHash("sha1").update(`${req.headers["sec-websocket-key"]}258EAFA5-E914-47DA-95CA-C5AB0DC85B11`).digest("base64");
    sockets.add(socket.on("error", () => undefined).on("close", () => sockets.delete(socket)));
    socket.write(["HTTP/1.1 101 Switching Protocols", "Upgrade: websocket", "Connection: Upgrade", `Sec-WebSocket-Accept: ${accept}`, "Sec-WebSocket-Protocol: actioncable-v1-json", "", ""].join("\r\n"));
    socket.write(frame(0x1, JSON.stringify({ type: "welcome" })));
    socket.write(frame(0x1, JSON.stringify({ type: "disconnect", reason: `refused: your cookie ${req.headers.cookie} has expired`, reconnect: false })));
    socket.end(frame(0x8, ""));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `ws://127.0.0.1:${(server.address() as AddressInfo).port}/cable`,
    cookies,
    close: () => {
      for (const socket of sockets) socket.destroy();
      return new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** A scenario whose users send the secret as their session cookie. */
function writeScenario(dir: string): string {
  mkdirSync(dir, { recursive: true });
  const file = path.join(dir, "echo.yml");
  writeFileSync(
    file,
    [
      "config:",
      "  target: ws://127.0.0.1:1/cable",
      "  engines: { cable: {} }",
      "  phases: [{ duration: 2, arrivalRate: 2 }]",
      "scenarios:",
      "  - engine: cable",
      "    flow:",
      '      - connect: { cookies: { session: "{{ $env.SESSION_COOKIE }}" } }',
      "      - think: 1",
      "",
    ].join("\n"),
  );
  return file;
}

const holdsSecret = (text: string) => FORMS.some((form) => text.includes(form));

/** The server's words as the run's report kept them: its refusal, with the cookie redacted. */
function expectRedactedWords(runDir: string): void {
  const merged = JSON.parse(readFileSync(path.join(runDir, "merged.json"), "utf8")) as { serverWords?: Array<{ error: string; text: string }>; all: { counters: Record<string, number> } };
  expect(merged.all.counters["errors.cable.server_disconnect"]).toBeGreaterThan(0);
  expect(merged.serverWords?.map((w) => w.text)).toContain("refused: your cookie session=*** has expired");
}

describe("a server that echoes the secret, with --local", () => {
  let work: string;
  let echo: Awaited<ReturnType<typeof startEchoingServer>>;
  beforeAll(async () => {
    work = mkdtempSync(path.join(os.tmpdir(), "cable-secret-echo-"));
    echo = await startEchoingServer();
  });
  afterAll(async () => {
    await echo?.close();
    rmSync(work, { recursive: true, force: true });
  });

  it("leaves the secret in no file of the run: task logs, artillery.log, sidecar, live files, status.json, merged.json, report.md, report.html, the workers' scratch", async () => {
    const scenario = writeScenario(path.join(work, "app"));
    const out = path.join(work, "results");
    const result = await runCli(["run", scenario, "--local", "--regions", "local-a", "--count", "2", "--secret", "SESSION_COOKIE", "--target", echo.url, "--start-delay", "1", "--out", out], {
      cwd: work,
      env: { SESSION_COOKIE: SECRET },
    });
    // The server refuses every user on purpose: over config.cable.maxFailedUsers (default 0), the merged run exits 6.
    expect(result.code, result.stderr).toBe(6);
    expect(result.stderr).toMatch(/(\d+) of \1 virtual users failed, more than config\.cable\.maxFailedUsers \(0\): cable-fanout exits 6\./);
    // The secret reached the server, which quoted it back.
    expect(echo.cookies.length).toBeGreaterThan(0);
    expect(echo.cookies.every((c) => c === `session=${SECRET}`)).toBe(true);
    const [runId] = readdirSync(out).filter((d) => !d.startsWith("."));
    expectRedactedWords(path.join(out, runId));
    expect(readFileSync(path.join(out, runId, "local-a/task-1/artillery.log"), "utf8")).toContain("refused: your cookie session=*** has expired");
    // Everything the run wrote: the results, the local store (bundle, task logs, live files, status, the workers' scratch).
    const searched = filesHolding(out, holdsSecret);
    expect(searched.files).toBeGreaterThan(20);
    expect(searched.leaks).toEqual([]);
    expect(holdsSecret(result.stdout + result.stderr)).toBe(false);
  }, 120_000);
});

describe("a server that echoes the secret, on the AWS path (moto)", () => {
  const aws = motoRegions(["eu-west-2"], {}, 240_000);
  let echo: Awaited<ReturnType<typeof startEchoingServer>>;
  beforeAll(async () => {
    echo = await startEchoingServer();
    await new SSMClient({ region: "eu-west-2" }).send(new PutParameterCommand({ Name: PARAMETER, Value: SECRET, Type: "SecureString", Overwrite: true }));
  });
  afterAll(async () => {
    await echo?.close();
  });

  it("leaves the secret in no file of the run, no object in the bucket and no task output", async () => {
    const { moto, stacks } = aws;
    const dir = path.join(aws.work, "secret-echo");
    const scenario = writeScenario(path.join(dir, "app"));
    const out = path.join(dir, "results");
    const ecs = await emulateEcs(stacks, moto.env, dir);
    let result: Awaited<ReturnType<typeof runCli>>;
    try {
      result = await runCli(["run", scenario, "--regions", "eu-west-2", "--secret", `SESSION_COOKIE=ssm:${PARAMETER}`, "--target", echo.url, "--start-delay", "1", "--out", out], { cwd: dir, env: moto.env, timeoutMs: 180_000 });
      await ecs.settled(30_000);
    } finally {
      await ecs.stop();
    }
    const tasks = [...ecs.tasks.values()];
    // The server refuses every user on purpose: over config.cable.maxFailedUsers (default 0), the merged run exits 6.
    expect(result.code, `${result.stderr}\n${tasks.map((t) => t.output.slice(-2_000)).join("\n")}`).toBe(6);
    expect(result.stderr).toMatch(/(\d+) of \1 virtual users failed, more than config\.cable\.maxFailedUsers \(0\): cable-fanout exits 6\./);
    expect(echo.cookies.length).toBeGreaterThan(0);
    expect(echo.cookies.every((c) => c === `session=${SECRET}`)).toBe(true);
    const [runId] = readdirSync(out).filter((d) => !d.startsWith("."));
    expectRedactedWords(path.join(out, runId));

    // The results downloaded and the workers' scratch (the container's disk).
    const searched = filesHolding(dir, holdsSecret);
    expect(searched.files).toBeGreaterThan(10);
    expect(searched.leaks).toEqual([]);
    // What CloudWatch would hold: each task's output, and the runner's console.
    expect(tasks).toHaveLength(1);
    expect(tasks.filter((t) => holdsSecret(t.output)).map((t) => t.taskId)).toEqual([]);
    expect(holdsSecret(result.stdout + result.stderr)).toBe(false);
    // Every object the run left in the region's bucket.
    const s3 = new S3Client({ region: "eu-west-2" });
    const bucket = stacks[0].bucketName;
    const { Contents = [], IsTruncated } = await s3.send(new ListObjectsV2Command({ Bucket: bucket, Prefix: `runs/${runId}/` }));
    expect(IsTruncated).toBeFalsy();
    expect(Contents.map((o) => o.Key)).toContain(`runs/${runId}/eu-west-2/${tasks[0].taskId}/report.json.sketches.json`);
    const leaking: string[] = [];
    for (const { Key } of Contents) {
      const { Body } = await s3.send(new GetObjectCommand({ Bucket: bucket, Key }));
      if (holdsSecret(await Body!.transformToString("latin1"))) leaking.push(Key!);
    }
    expect(leaking).toEqual([]);
  }, 300_000);
});
