import { describe, expect, test } from "vitest";
import { parseBroadcastBody } from "../src/anycable/broadcast.js";
import { malformed } from "../src/counters.js";
import { Faults, parseFaults } from "../src/faults.js";
import { Hub } from "../src/hub.js";
import { TimerSet } from "../src/timers.js";
import { parseTargetOptions } from "../src/options.js";

describe("Hub", () => {
  test("prepares once per group, delivers once per subscriber", () => {
    const hub = new Hub<string>();
    for (const s of ["a", "b", "c"]) hub.subscribe("all", "id-1", s);
    hub.subscribe("all", "id-2", "d");
    hub.subscribe("other", "id-1", "e");
    const prepared: string[] = [];
    const delivered: string[] = [];
    const reached = hub.publish(
      "all",
      (group) => {
        prepared.push(group);
        return `frame(${group})`;
      },
      (subscriber, frame) => delivered.push(`${subscriber}:${frame}`),
    );
    expect(reached).toBe(4);
    expect(prepared).toEqual(["id-1", "id-2"]);
    expect(delivered.sort()).toEqual(["a:frame(id-1)", "b:frame(id-1)", "c:frame(id-1)", "d:frame(id-2)"]);
  });

  test("unsubscribing the last member forgets the stream", () => {
    const hub = new Hub<string>();
    hub.subscribe("s", "g", "a");
    hub.unsubscribe("s", "g", "a");
    hub.unsubscribe("s", "g", "never-there");
    expect(hub.publish("s", () => expect.unreachable(), () => expect.unreachable())).toBe(0);
  });
});

describe("Faults", () => {
  test("errors name the offending field", () => {
    expect(() => parseFaults({ dropBroadcastRatio: 2 })).toThrow(/faults\.dropBroadcastRatio/);
    expect(() => parseFaults({ channels: { ChatChannel: { confirmDelayMs: -1 } } })).toThrow(/faults\.channels\.ChatChannel\.confirmDelayMs/);
    expect(() => parseFaults({ dropRatio: 0.5 })).toThrow(/Unrecognized key/);
    expect(() => parseFaults({ channels: { X: { stopPinging: true } } })).toThrow(/faults\.channels\.X/);
  });

  test("per-channel overrides replace the run-wide knobs for that channel only", () => {
    const faults = new Faults({ confirmDelayMs: 10, dropBroadcastRatio: 0.1, channels: { ChatChannel: { confirmDelayMs: 500 } } });
    expect(faults.forChannel("ChatChannel")).toMatchObject({ confirmDelayMs: 500, dropBroadcastRatio: 0.1 });
    expect(faults.forChannel("BenchmarkChannel")).toMatchObject({ confirmDelayMs: 10 });
  });

  test("ratios: 0 never, 1 always, and a seed repeats the same draws", () => {
    const a = new Faults({ seed: 7 });
    const b = new Faults({ seed: 7 });
    expect(Array.from({ length: 100 }, () => a.chance(0))).not.toContain(true);
    expect(Array.from({ length: 100 }, () => a.chance(1))).not.toContain(false);
    const drawsA = Array.from({ length: 1000 }, () => a.chance(0.3));
    const drawsB = Array.from({ length: 1000 }, () => b.chance(0.3));
    expect(drawsA).toEqual(drawsB);
    const hits = drawsA.filter(Boolean).length;
    expect(hits).toBeGreaterThan(240);
    expect(hits).toBeLessThan(360);
  });
});

test("a malformed frame is not JSON and stays valid UTF-8", () => {
  const frame = Buffer.from(JSON.stringify({ message: "ééééééé" }));
  const cut = malformed(frame);
  expect(cut.length).toBeLessThan(frame.length);
  expect(() => JSON.parse(cut.toString())).toThrow();
  expect(Buffer.from(cut.toString("utf8"))).toEqual(cut);
});

test("TimerSet clears everything it started", async () => {
  const timers = new TimerSet();
  let fired = 0;
  timers.timeout(() => fired++, 5);
  timers.interval(() => fired++, 5);
  expect(timers.size).toBe(2);
  timers.clearAll();
  await new Promise((r) => setTimeout(r, 30));
  expect(fired).toBe(0);
  expect(timers.size).toBe(0);
});

describe("inputs", () => {
  test("AnyCable broadcast bodies: one publication or an array; errors name the field", () => {
    expect(parseBroadcastBody('{"stream":"s","data":"{}"}')).toEqual([{ stream: "s", data: "{}" }]);
    expect(parseBroadcastBody('[{"stream":"a","data":"1"},{"stream":"b","data":"2","meta":{}}]')).toHaveLength(2);
    expect(() => parseBroadcastBody('{"stream":"s","data":{"a":1}}')).toThrow(/body\.data/);
    expect(() => parseBroadcastBody("{")).toThrow(/not JSON/);
  });

  test("target options: defaults, and errors naming the field", () => {
    const options = parseTargetOptions({});
    expect(options).toMatchObject({ host: "127.0.0.1", port: 0, cable: { requireUid: true, pingIntervalMs: 3000 }, pusher: { errorStyle: "pusher" } });
    expect(() => parseTargetOptions({ pusher: { key: "" } })).toThrow(/options\.pusher\.key/);
    expect(() => parseTargetOptions({ port: 70000 })).toThrow(/options\.port/);
  });
});
