// The harness's real servers crash (kill -9) and come back on the same port, as the engine's restart
// tests need: while down, the port refuses connections; after restart, it serves again.
import net from "node:net";
import WebSocket from "ws";
import { describe, expect, test } from "vitest";
import { startAnyCable, startRails, startReverb, startSockudo, startSoketi, type RunningServer } from "../src/index.js";

function connects(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect({ port, host: "127.0.0.1" });
    socket.once("connect", () => (socket.destroy(), resolve(true)));
    socket.once("error", () => resolve(false));
  });
}

/** The first frame a fresh socket gets, parsed. */
function firstFrame(url: string, protocols: string[] = [], headers: Record<string, string> = {}): Promise<any> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, protocols, { headers });
    const timer = setTimeout(() => (ws.terminate(), reject(new Error(`no frame from ${url}`))), 5_000);
    ws.once("message", (data) => {
      clearTimeout(timer);
      ws.close();
      resolve(JSON.parse(data.toString()));
    });
    ws.once("error", (err) => (clearTimeout(timer), reject(err)));
  });
}

async function crashAndRestart(server: RunningServer, hello: () => Promise<unknown>, expected: unknown) {
  try {
    expect(await hello()).toMatchObject(expected as object);
    await server.kill();
    expect(await connects(server.port)).toBe(false);
    await server.restart();
    expect(await hello()).toMatchObject(expected as object);
  } finally {
    await server.stop();
  }
}

describe("crash and restart on the same port", () => {
  test("anycable-go (public, extended protocol)", async () => {
    const anycable = await startAnyCable({ broker: "memory" });
    await crashAndRestart(anycable, () => firstFrame(anycable.url, ["actioncable-v1-ext-json"]), { type: "welcome", sid: expect.any(String) });
  });

  test("anycable-go in Pusher mode", async () => {
    const anycable = await startAnyCable({ pusher: { appId: "app", key: "key", secret: "secret" } });
    await crashAndRestart(anycable, () => firstFrame(`${anycable.pusherUrl}/app/key?protocol=7`), { event: "pusher:connection_established" });
  });

  test("Rails under puma", async () => {
    const rails = await startRails();
    await crashAndRestart(rails, () => firstFrame(rails.url, ["actioncable-v1-json"], { Cookie: "uid=Kay/1" }), { type: "welcome" });
  });

  test("Soketi", async () => {
    const soketi = await startSoketi();
    await crashAndRestart(soketi, () => firstFrame(`${soketi.url}/app/${soketi.key}?protocol=7`), { event: "pusher:connection_established" });
  });

  test("Reverb", async () => {
    const reverb = await startReverb();
    await crashAndRestart(reverb, () => firstFrame(`${reverb.url}/app/${reverb.key}?protocol=7`), { event: "pusher:connection_established" });
  });

  test("Sockudo", async () => {
    const sockudo = await startSockudo();
    await crashAndRestart(sockudo, () => firstFrame(`${sockudo.url}/app/${sockudo.key}?protocol=7`), { event: "pusher:connection_established" });
  });
});
