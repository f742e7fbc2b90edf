import WebSocket from "ws";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import path from "node:path";
import { counter, runArtillery, samples, startAnyCableRails, startRails, type RunningServer } from "../src/index.js";

const ROOT = path.resolve(__dirname, "../../..");

function frames(ws: WebSocket, count: number): Promise<any[]> {
  const got: any[] = [];
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`only ${JSON.stringify(got)}`)), 5_000);
    ws.on("message", (data) => {
      const frame = JSON.parse(data.toString());
      if (frame.type === "ping") return;
      got.push(frame);
      if (got.length === count) {
        clearTimeout(timer);
        resolve(got);
      }
    });
  });
}

const open = (url: string, cookie?: string) =>
  new WebSocket(url, ["actioncable-v1-json"], cookie ? { headers: { Cookie: cookie } } : {});

// The same exchanges on Action Cable and on anycable-go in front of the RPC stand-in: seed 000's
// comparison runs one scenario on both, so both must answer it alike.
describe.each([
  ["Action Cable (puma)", () => startRails()],
  ["anycable-go with the channels behind its HTTP RPC", () => startAnyCableRails()],
] as [string, () => Promise<RunningServer & { url: string }>][])("%s", (_name, start) => {
  let server: RunningServer & { url: string };
  beforeAll(async () => {
    server = await start();
  });
  afterAll(() => server?.stop());

  test("welcomes a user with a cookie and rejects one without", async () => {
    const ok = open(server.url, "uid=Kay/1");
    expect(await frames(ok, 1)).toEqual([{ type: "welcome" }]);
    ok.close();
    const anonymous = open(server.url);
    expect(await frames(anonymous, 1)).toEqual([{ type: "disconnect", reason: "unauthorized", reconnect: false }]);
  });

  test("ChatChannel: speak reaches every subscriber with its author; BenchmarkChannel echoes; RejectChannel rejects", async () => {
    const chat = JSON.stringify({ channel: "ChatChannel", id: "demo" });
    const [alice, bob] = [open(server.url, "uid=Alice/1001"), open(server.url, "uid=Bob/1002")];
    const [aliceWelcome, bobWelcome] = [frames(alice, 2), frames(bob, 2)];
    await Promise.all([new Promise((r) => alice.once("open", r)), new Promise((r) => bob.once("open", r))]);
    alice.send(JSON.stringify({ command: "subscribe", identifier: chat }));
    bob.send(JSON.stringify({ command: "subscribe", identifier: chat }));
    const confirmed = [{ type: "welcome" }, { identifier: chat, type: "confirm_subscription" }];
    expect(await aliceWelcome).toEqual(confirmed);
    expect(await bobWelcome).toEqual(confirmed);

    const [toAlice, toBob] = [frames(alice, 1), frames(bob, 1)];
    alice.send(JSON.stringify({ command: "message", identifier: chat, data: JSON.stringify({ action: "speak", message: "hi", sentAt: 7 }) }));
    const said = { identifier: chat, message: { action: "newMessage", author_id: "1001", message: "hi", sentAt: 7 } };
    expect(await toAlice).toEqual([said]);
    expect(await toBob).toEqual([said]);

    const bench = JSON.stringify({ channel: "BenchmarkChannel" });
    const benchConfirmed = frames(bob, 1);
    bob.send(JSON.stringify({ command: "subscribe", identifier: bench }));
    expect(await benchConfirmed).toEqual([{ identifier: bench, type: "confirm_subscription" }]);
    const echoed = frames(bob, 1);
    bob.send(JSON.stringify({ command: "message", identifier: bench, data: JSON.stringify({ action: "echo", n: 1 }) }));
    expect(await echoed).toEqual([{ identifier: bench, message: { action: "echo", n: 1 } }]);

    const reject = JSON.stringify({ channel: "RejectChannel" });
    const rejected = frames(alice, 1);
    alice.send(JSON.stringify({ command: "subscribe", identifier: reject }));
    expect(await rejected).toEqual([{ identifier: reject, type: "reject_subscription" }]);
    alice.close();
    bob.close();
  });

  // Seed 000's chat and seed 001's broadcast benchmark through the real CLI, shortened.
  test.each([
    ["chat.yml", 4, {}, "cable.rtt"],
    ["cable-broadcast.yml", 20, { lifetime: 2, sends: 8 }, "cable.handshake_latency"],
  ] as const)("scenarios/%s runs clean through artillery", async (file, users, variables, histogram) => {
    const { code, output, report } = await runArtillery({
      script: path.join(ROOT, "scenarios", file),
      args: ["--target", server.url, "--overrides", JSON.stringify({ config: { phases: [{ duration: 1, arrivalCount: users }] } }), "-v", JSON.stringify(variables)],
    });
    expect(code, output).toBe(0);
    expect(counter(report!, "vusers.completed"), output).toBe(users);
    expect(Object.keys(report!.aggregate.counters).filter((k) => k.startsWith("errors.")), output).toEqual([]);
    expect(samples(report!, histogram)).toBeGreaterThan(0);
    if (file === "cable-broadcast.yml") expect(counter(report!, "cable.messages_received")).toBeGreaterThan(0);
  }, 90_000);
});
