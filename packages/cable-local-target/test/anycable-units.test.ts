import { describe, expect, test } from "vitest";
import { parseClientCommand } from "../src/actioncable/frames.js";
import * as ext from "../src/anycable/ext-frames.js";
import { HistoryStore } from "../src/anycable/history.js";
import { PresenceSets } from "../src/anycable/presence.js";
import { SessionCache } from "../src/anycable/sessions.js";

const T0 = 1_700_000_000_000;

describe("HistoryStore", () => {
  const offsets = (backlog: ReturnType<HistoryStore["retrieve"]>) => backlog?.map(({ entry }) => entry.offset);

  test("offsets count per stream from 1; the log keeps the last `limit` messages", () => {
    const store = new HistoryStore({ limit: 3, ttlMs: 60_000 });
    for (let i = 1; i <= 5; i++) expect(store.append("a", `${i}`, T0).offset).toBe(i);
    expect(store.append("b", '"x"', T0)).toEqual({ stream: "b", epoch: store.epoch, offset: 1 });
    const from = (offset: number) => offsets(store.retrieve({ streams: { a: { epoch: store.epoch, offset } } }, ["a"], T0));
    expect(from(1)).toBeUndefined(); // offset 1 is no longer kept (kept: 3..5)
    expect(from(2)).toBeUndefined();
    expect(from(3)).toEqual([4, 5]);
    expect(from(5)).toEqual([]);
    expect(from(6)).toBeUndefined(); // beyond the latest
    expect(store.retrieve({ streams: { a: { epoch: "other", offset: 4 } } }, ["a"], T0)).toBeUndefined();
    expect(store.retrieve({ streams: { nowhere: { epoch: store.epoch, offset: 0 } } }, ["nowhere"], T0)).toBeUndefined();
  });

  test("since (unix seconds) selects by append time; streams with a position use it instead", () => {
    const store = new HistoryStore({ limit: 100, ttlMs: 600_000 });
    store.append("a", "1", T0);
    store.append("a", "2", T0 + 10_000);
    store.append("b", "1", T0);
    store.append("b", "2", T0);
    const since = Math.floor((T0 + 5_000) / 1000);
    const backlog = store.retrieve({ since, streams: { b: { epoch: store.epoch, offset: 1 } } }, ["a", "b", "empty"], T0 + 20_000);
    expect(backlog?.map(({ stream, entry }) => `${stream}:${entry.offset}`)).toEqual(["a:2", "b:2"]);
    // As in AnyCable, a position must name a kept offset: 0 ("nothing yet") cannot be served.
    expect(store.retrieve({ streams: { b: { epoch: store.epoch, offset: 0 } } }, ["b"], T0)).toBeUndefined();
  });

  test("messages older than the TTL expire; reset starts a new epoch from offset 1", () => {
    const store = new HistoryStore({ limit: 100, ttlMs: 1_000 });
    store.append("a", "1", T0);
    store.append("a", "2", T0 + 900);
    store.expire(T0 + 1_500);
    expect(offsets(store.retrieve({ since: 1 }, ["a"], T0 + 1_500))).toEqual([2]);
    expect(store.retrieve({ streams: { a: { epoch: store.epoch, offset: 1 } } }, ["a"], T0 + 1_500)).toBeUndefined();
    store.expire(T0 + 5_000);
    // An empty log cannot serve a position, as in AnyCable (memory.go: "stream is empty").
    expect(store.retrieve({ streams: { a: { epoch: store.epoch, offset: 2 } } }, ["a"], T0 + 5_000)).toBeUndefined();
    expect(store.append("a", "3", T0 + 5_000).offset).toBe(3);
    const before = store.epoch;
    store.reset();
    expect(store.epoch).not.toBe(before);
    expect(store.append("a", "1", T0).offset).toBe(1);
  });

  test("the ring wraps correctly after expiry moved its head", () => {
    const store = new HistoryStore({ limit: 4, ttlMs: 1_000 });
    for (let i = 1; i <= 3; i++) store.append("a", `${i}`, T0);
    for (let i = 4; i <= 9; i++) store.append("a", `${i}`, T0 + 2_000);
    const backlog = store.retrieve({ streams: { a: { epoch: store.epoch, offset: 6 } } }, ["a"], T0 + 2_000);
    expect(backlog?.map(({ entry }) => entry.messageJson)).toEqual(["7", "8", "9"]);
  });
});

describe("SessionCache", () => {
  test("a retired session is found until its TTL passes; restoring does not consume it", () => {
    const cache = new SessionCache<string>(1_000);
    cache.retire("s1", "one", T0);
    cache.retire("s2", "two", T0 + 500);
    expect(cache.find("s1", T0 + 999)).toBe("one");
    expect(cache.find("s1", T0 + 999)).toBe("one");
    expect(cache.find("s1", T0 + 1_000)).toBeUndefined();
    cache.expire(T0 + 1_200);
    expect(cache.size).toBe(1);
    expect(cache.find("s2", T0 + 1_200)).toBe("two");
  });

  test("a TTL of 0 disables the cache", () => {
    const cache = new SessionCache<string>(0);
    cache.retire("s", "x", T0);
    expect(cache.find("s", T0)).toBeUndefined();
  });
});

describe("PresenceSets", () => {
  test("join only for a new id, leave only with its last session, mismatched ids refused", () => {
    const sets = new PresenceSets(1_000);
    expect(sets.join("room", "s1", "u1", { n: 1 })).toEqual({ type: "join", id: "u1", info: { n: 1 } });
    expect(sets.join("room", "s2", "u1", { n: 2 })).toBeUndefined();
    expect(sets.join("room", "s1", "other", null)).toBe("mismatch");
    expect(sets.info("room")).toEqual({ type: "info", total: 1, records: [{ id: "u1", info: { n: 2 } }] });
    expect(sets.leave("room", "s1")).toBeUndefined();
    expect(sets.leave("room", "s2")).toEqual({ type: "leave", id: "u1" });
    expect(sets.leave("room", "s2")).toBeUndefined();
    expect(sets.info("room")).toEqual({ type: "info", total: 0, records: [] });
  });

  test("a disconnected session's records expire after the TTL, with leave events", () => {
    const sets = new PresenceSets(1_000);
    sets.join("a", "s1", "u1", null);
    sets.join("b", "s1", "u1", null);
    sets.join("a", "s2", "u2", null);
    sets.disconnected("s1", T0);
    sets.disconnected("nobody", T0);
    expect(sets.expire(T0 + 999)).toEqual([]);
    expect(sets.expire(T0 + 1_000)).toEqual([
      { stream: "a", event: { type: "leave", id: "u1" } },
      { stream: "b", event: { type: "leave", id: "u1" } },
    ]);
    expect(sets.info("a").total).toBe(1);
  });
});

describe("extended protocol frames", () => {
  test("server frames have anycable-go's key order", () => {
    expect(ext.welcome("abc")).toBe('{"type":"welcome","sid":"abc"}');
    expect(ext.restoredWelcome("new", ['{"channel":"A"}'])).toBe('{"type":"welcome","sid":"new","restored":true,"restored_ids":["{\\"channel\\":\\"A\\"}"]}');
    expect(ext.positionedMessage("id", '{"a":1}', { stream: "s", epoch: "e", offset: 7 })).toBe(
      '{"identifier":"id","message":{"a":1},"stream_id":"s","epoch":"e","offset":7}',
    );
    expect(ext.confirmHistory("id")).toBe('{"type":"confirm_history","identifier":"id"}');
    expect(ext.rejectHistory("id")).toBe('{"type":"reject_history","identifier":"id"}');
    expect(ext.presenceMessage("id", { type: "leave", id: "u" })).toBe('{"type":"presence","identifier":"id","message":{"type":"leave","id":"u"}}');
    expect(ext.whisperMessage("id", '{"t":1}')).toBe('{"identifier":"id","message":{"t":1}}');
  });

  test("extended commands parse only on extended connections", () => {
    const history = '{"command":"history","identifier":"x","history":{"since":5,"streams":{"s":{"epoch":"e","offset":3}}}}';
    expect(parseClientCommand(history, true)).toEqual({ command: "history", identifier: "x", history: { since: 5, streams: { s: { epoch: "e", offset: 3 } } } });
    expect(parseClientCommand(history, false)).toEqual({ error: 'unrecognized command "history"' });
    expect(parseClientCommand('{"command":"pong"}', true)).toEqual({ command: "pong" });
    expect(parseClientCommand('{"command":"history","identifier":"x","history":{}}', true)).toEqual({ error: "history request is missing or invalid" });
    expect(parseClientCommand('{"command":"whisper","identifier":"x","data":{"a":1}}', true)).toEqual({ command: "whisper", identifier: "x", dataJson: '{"a":1}' });
    expect(parseClientCommand('{"command":"join","identifier":"x","presence":{"id":42,"info":"n"}}', true)).toEqual({
      command: "join",
      identifier: "x",
      presenceId: "42",
      info: "n",
    });
    expect(parseClientCommand('{"command":"join","identifier":"x","presence":{}}', true)).toEqual({ error: "presence.id is required" });
    const subscribe = '{"command":"subscribe","identifier":"x","history":{"since":9}}';
    expect(parseClientCommand(subscribe, true)).toEqual({ command: "subscribe", identifier: "x", history: { since: 9 } });
    expect(parseClientCommand(subscribe, false)).toEqual({ command: "subscribe", identifier: "x" });
  });
});
