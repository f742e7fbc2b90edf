import WebSocket from "ws";
import { afterAll, beforeAll, expect, test } from "vitest";
import { startRails, type RailsServer } from "../src/index.js";

let rails: RailsServer;
beforeAll(async () => {
  rails = await startRails();
});
afterAll(() => rails?.stop());

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

test("the harness's Rails server welcomes a user with a cookie and rejects one without", async () => {
  const ok = new WebSocket(rails.url, ["actioncable-v1-json"], { headers: { Cookie: "uid=Kay/1" } });
  expect(await frames(ok, 1)).toEqual([{ type: "welcome" }]);
  ok.close();
  const anonymous = new WebSocket(rails.url, ["actioncable-v1-json"]);
  expect(await frames(anonymous, 1)).toEqual([{ type: "disconnect", reason: "unauthorized", reconnect: false }]);
});
