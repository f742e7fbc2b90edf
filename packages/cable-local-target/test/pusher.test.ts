import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { startTarget, type LocalTarget } from "../src/index.js";
import { connect, pusherClient, pusherData, subscribeFrame, triggerSigned, type RawClient } from "./helpers.js";

// Local-target specifics of the Pusher side; the behaviour shared with Sockudo is in conformance.test.ts.

let target: LocalTarget;
const clients: RawClient[] = [];
beforeAll(async () => {
  target = await startTarget();
});
afterAll(async () => {
  for (const c of clients) c.close();
  await target.close();
});

async function subscribed(channel: string, t: LocalTarget = target) {
  const { client, socketId } = await pusherClient(t.url, t.pusher.key);
  clients.push(client);
  client.send(subscribeFrame(t.pusher, socketId, channel));
  expect(await client.next()).toMatchObject({ event: "pusher_internal:subscription_succeeded", channel });
  return { client, socketId };
}

describe("HTTP events API", () => {
  test("one event to several channels; data passes through as the string it was sent as", async () => {
    const a = await subscribed("api-a");
    const b = await subscribed("api-b");
    const response = await triggerSigned(target.httpUrl, target.pusher, { name: "tick", channels: ["api-a", "api-b"], data: '{"n":1}' });
    expect(response.status).toBe(200);
    expect(await response.json()).toEqual({});
    expect(await a.client.next()).toEqual({ event: "tick", channel: "api-a", data: '{"n":1}' });
    expect(await b.client.next()).toEqual({ event: "tick", channel: "api-b", data: '{"n":1}' });
  });

  test("socket_id excludes that connection", async () => {
    const a = await subscribed("api-x");
    const b = await subscribed("api-x");
    await triggerSigned(target.httpUrl, target.pusher, { name: "tick", channel: "api-x", data: "1", socket_id: a.socketId });
    expect(await b.client.next()).toMatchObject({ event: "tick" });
    expect(await a.client.collect(200)).toEqual([]);
  });

  test("refusals: wrong secret 401, unknown app 404, both channel and channels 400", async () => {
    expect((await triggerSigned(target.httpUrl, target.pusher, { name: "e", channel: "c", data: "1" }, { secret: "wrong" })).status).toBe(401);
    expect((await triggerSigned(target.httpUrl, { ...target.pusher, appId: "other" }, { name: "e", channel: "c", data: "1" })).status).toBe(404);
    const both = await triggerSigned(target.httpUrl, target.pusher, { name: "e", channel: "c", channels: ["d"], data: "1" });
    expect(both.status).toBe(400);
    expect(((await both.json()) as { error: string }).error).toMatch(/channel or channels/);
  });

  test("an unsigned request is refused", async () => {
    const response = await fetch(`${target.httpUrl}/apps/${target.pusher.appId}/events`, { method: "POST", body: '{"name":"e","channel":"c","data":"1"}' });
    expect(response.status).toBe(401);
  });
});

describe("protocol details", () => {
  test("subscribe data may be a JSON string as well as an object", async () => {
    const { client } = await pusherClient(target.url, target.pusher.key);
    clients.push(client);
    client.send({ event: "pusher:subscribe", data: JSON.stringify({ channel: "stringy" }) });
    expect(await client.next()).toMatchObject({ event: "pusher_internal:subscription_succeeded", channel: "stringy" });
  });

  test("an unsupported protocol version is refused with 4007", async () => {
    const client = await connect(`${target.url}/app/${target.pusher.key}?protocol=3`);
    clients.push(client);
    expect(pusherData(await client.next())).toMatchObject({ code: 4007 });
    expect((await client.closed).code).toBe(4007);
  });

  test("client events are refused when the app disables them", async () => {
    const off = await startTarget({ pusher: { clientEvents: false } });
    try {
      const { client } = await subscribed("private-quiet", off);
      client.send({ event: "client-hi", channel: "private-quiet", data: {} });
      expect(await client.next()).toMatchObject({ event: "pusher:error" });
    } finally {
      await off.close();
    }
  });

  test("client events on a channel the sender has not joined are refused", async () => {
    const { client } = await subscribed("private-joined");
    client.send({ event: "client-hi", channel: "private-elsewhere", data: {} });
    expect(pusherData(await client.next()).message).toMatch(/not subscribed/);
  });

  test("presence: a second socket of the same user adds no member; the user leaves with its last socket", async () => {
    const channel = "presence-multi";
    const data = (id: string) => JSON.stringify({ user_id: id, user_info: { name: id } });
    const watcher = await pusherClient(target.url, target.pusher.key);
    clients.push(watcher.client);
    watcher.client.send(subscribeFrame(target.pusher, watcher.socketId, channel, data("w")));
    await watcher.client.next();
    const tabs = [];
    for (let i = 0; i < 2; i++) {
      const tab = await pusherClient(target.url, target.pusher.key);
      clients.push(tab.client);
      tab.client.send(subscribeFrame(target.pusher, tab.socketId, channel, data("u")));
      expect(pusherData(await tab.client.next()).presence.count).toBe(2);
      tabs.push(tab);
    }
    expect((await watcher.client.collect(200)).map((f) => f.event)).toEqual(["pusher_internal:member_added"]);
    tabs[0].client.close();
    expect(await watcher.client.collect(200)).toEqual([]);
    tabs[1].client.close();
    expect(await watcher.client.next()).toMatchObject({ event: "pusher_internal:member_removed" });
  });

  test("the Sockudo style answers a refused subscription with pusher:error 4009", async () => {
    const sockudoStyle = await startTarget({ pusher: { errorStyle: "sockudo" } });
    try {
      const { client } = await pusherClient(sockudoStyle.url, sockudoStyle.pusher.key);
      client.send({ event: "pusher:subscribe", data: { channel: "private-x", auth: "local-key:bad" } });
      const frame = await client.next();
      expect(frame.event).toBe("pusher:error");
      expect(pusherData(frame).code).toBe(4009);
      client.close();
    } finally {
      await sockudoStyle.close();
    }
  });

  test("counters include Pusher connections", async () => {
    const own = await startTarget();
    try {
      const { client } = await pusherClient(own.url, own.pusher.key);
      expect(own.counters()).toMatchObject({ pusherConnections: 1, cableConnections: 0, framesOut: 1 });
      client.close();
    } finally {
      await own.close();
    }
  });
});
