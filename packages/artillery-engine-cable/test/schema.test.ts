import { describe, expect, test } from "vitest";
import { ScenarioError } from "../src/errors.js";
import { parseConfig } from "../src/config.js";
import { validateScript } from "../src/schema.js";

function problems(flow: unknown[], extra: Record<string, unknown> = {}): string[] {
  try {
    validateScript({ config: { target: "ws://x", ...extra }, scenarios: [{ name: "s", engine: "cable", flow }] }, parseConfig(undefined));
    return [];
  } catch (err) {
    expect(err).toBeInstanceOf(ScenarioError);
    return (err as ScenarioError).problems;
  }
}

const connected = [{ connect: {} }, { subscribe: { channel: "ChatChannel", params: { id: 1 }, as: "chat" } }];

describe("scenario validation before any load", () => {
  test("a good flow passes, with every step kind", () => {
    expect(
      problems([
        ...connected,
        { perform: { channel: "chat", action: "speak", data: { message: "hi" }, stamp: true } },
        { receive: { channel: "chat", match: { author_id: "{{ id }}" }, timeout: 5, capture: { json: "$.message", as: "m" }, metric: true } },
        { receive: { channel: "chat", metric: "echo_rtt", timeout: "{{ $env.T }}" } },
        { listen: { channel: "chat", for: 1 } },
        { think: 1, jitter: "10%" },
        { loop: [{ perform: { channel: "chat", action: "speak" } }], count: 3 },
        { log: "hi" },
        { unsubscribe: { channel: "chat" } },
        { disconnect: null },
      ]),
    ).toEqual([]);
  });

  test("an unknown step is named with its index and the known steps", () => {
    expect(problems([...connected, { recieve: { channel: "chat" } }])).toEqual([
      'scenario "s", step 3: unknown step "recieve"; did you mean "receive"? (known: connect, subscribe, perform, receive, trigger, publish, whisper, join, leave, reconnect, listen, unsubscribe, disconnect, get, post, put, patch, delete, think, function, log, loop)',
    ]);
  });

  test("a missing field is named", () => {
    expect(problems([...connected, { perform: { channel: "chat" } }])).toEqual(['scenario "s", step 3 (perform): field "action": Required']);
  });

  test("a wrong type is named", () => {
    expect(problems([...connected, { receive: { channel: "chat", timeout: "soon" } }])).toEqual([
      'scenario "s", step 3 (receive): field "timeout": expected a number or a {{ template }}',
    ]);
    expect(problems([{ connect: { headers: ["x"] } }])[0]).toMatch(/^scenario "s", step 1 \(connect\): field "headers": Expected object/);
  });

  test("a misspelt field is named as unknown", () => {
    expect(problems([...connected, { perform: { channel: "chat", action: "speak", stmap: true } }])).toEqual([
      'scenario "s", step 3 (perform): unknown field "stmap"',
    ]);
  });

  test("a perform on a channel never subscribed names the channel and what is subscribed", () => {
    expect(problems([...connected, { perform: { channel: "ChatChannel", action: "speak" } }])).toEqual([
      'scenario "s", step 3 (perform): field "channel": "ChatChannel" is not subscribed by an earlier step (subscribed: chat)',
    ]);
  });

  test("a subscribe before any connect is a mistake", () => {
    expect(problems([{ subscribe: { channel: "C" } }])).toEqual(['scenario "s", step 1 (subscribe): no "connect" step comes before it']);
  });

  test("mistakes inside a loop are located inside it", () => {
    expect(problems([...connected, { loop: [{ think: 1 }, { perform: { channel: "nope", action: "a" } }], count: 2 }])).toEqual([
      'scenario "s", step 3 loop step 2 (perform): field "channel": "nope" is not subscribed by an earlier step (subscribed: chat)',
    ]);
  });

  test("a bad capture path is caught before the run", () => {
    expect(problems([...connected, { receive: { channel: "chat", capture: { json: "message.id", as: "id" } } }])[0]).toMatch(
      /step 3 \(receive\): field "capture.json": a capture path starts with "\$"/,
    );
  });

  test("a function the processor lacks is named", () => {
    expect(problems([{ function: "setUser" }], { processor: { other: () => undefined } })).toEqual([
      'scenario "s", step 1 (function): the processor has no function "setUser"',
    ]);
  });

  test("all mistakes are reported at once", () => {
    expect(problems([{ subscribe: { channel: "C" } }, { bogus: 1 }, { think: -1 }])).toHaveLength(3);
  });

  test("scenarios of other engines are left alone", () => {
    expect(() => validateScript({ config: {}, scenarios: [{ engine: "ws", flow: [{ send: "x" }] }] }, parseConfig(undefined))).not.toThrow();
  });

  test("steps of the other protocol are named as such", () => {
    expect(problems([{ connect: {} }, { subscribe: { channel: "private-x" } }, { trigger: { channel: "private-x", event: "client-a" } }])).toEqual([
      'scenario "s", step 3 (trigger): not a step of protocol actioncable: Action Cable has no client events: use "perform"',
    ]);
  });

  test("Pusher: client events need a client- name and a private or presence channel; presence needs a user", () => {
    const pusher = { cable: { protocol: "pusher", pusher: { key: "k", secret: "s" } } };
    const check = (flow: unknown[]) => {
      try {
        validateScript({ config: { target: "ws://x" }, scenarios: [{ name: "p", engine: "cable", flow }] }, parseConfig(pusher.cable, {}));
        return [];
      } catch (err) {
        return (err as ScenarioError).problems;
      }
    };
    expect(check([{ connect: {} }, { subscribe: { channel: "public" } }, { trigger: { channel: "public", event: "client-a" } }])).toEqual([
      'scenario "p", step 3 (trigger): field "channel": client events go only on private- or presence- channels (got "public")',
    ]);
    expect(check([{ connect: {} }, { subscribe: { channel: "private-a", as: "a" } }, { trigger: { channel: "a", event: "broadcast" } }])).toEqual([
      'scenario "p", step 3 (trigger): field "event": a client event\'s name starts with "client-" (got "broadcast")',
    ]);
    expect(check([{ connect: {} }, { subscribe: { channel: "presence-room" } }])).toEqual([
      'scenario "p", step 2 (subscribe): field "user": a presence channel needs user: {id, info} (or an authEndpoint: the app names the member)',
    ]);
    expect(check([{ connect: {} }, { perform: { channel: "x", action: "a" } }])[0]).toMatch(/not a step of protocol pusher/);
    expect(check([{ publish: { event: "e", channel: "c" } }])).toEqual(['scenario "p", step 1 (publish): the HTTP API needs config.cable.pusher.appId, and the secret (PUSHER_APP_SECRET or config.cable.pusher.secret)']);
    expect(check([{ publish: { event: "e" } }])[0]).toMatch(/give one of "channel" or "channels"/);
  });

  test("reconnect works on every protocol; only its history needs AnyCable's extended protocol", () => {
    const flow = (reconnect: unknown) => [...connected, { reconnect }, { listen: { channel: "chat", for: 1 } }];
    expect(problems(flow(null))).toEqual([]);
    expect(problems(flow({ after: "drop", wait: 60, timeout: 30, jitter: 1, initialDelay: 0.25, maxDelay: "{{ max }}" }))).toEqual([]);
    expect(problems(flow({ history: true }))).toEqual([
      'scenario "s", step 3 (reconnect): "history" needs AnyCable\'s extended protocol: set config.cable.anycable.extended',
    ]);
    expect(problems(flow({ timout: 3 }))).toEqual(['scenario "s", step 3 (reconnect): unknown field "timout"']);
    expect(problems([{ reconnect: null }])).toEqual(['scenario "s", step 1 (reconnect): no "connect" step comes before it']);
    const pusher = { protocol: "pusher", pusher: { key: "k" } };
    const pusherFlow = [{ connect: {} }, { subscribe: { channel: "news" } }, { reconnect: { after: "drop" } }];
    expect(() => validateScript({ config: {}, scenarios: [{ engine: "cable", flow: pusherFlow }] }, parseConfig(pusher))).not.toThrow();
  });

  test("receive {event: whisper} is refused, naming the step: whispers are plain messages, received by payload", () => {
    const ext = parseConfig({ anycable: { extended: "required" } });
    const flow = [{ connect: {} }, { subscribe: { stream: "lobby", as: "lobby" } }, { receive: { channel: "lobby", event: "whisper" } }];
    expect(() => validateScript({ config: {}, scenarios: [{ name: "w", engine: "cable", flow }] }, ext)).toThrow(
      /scenario "w", step 3 \(receive\): field "event": no server sends a "whisper" frame: .* Receive it with "match" on a field of its data/,
    );
    const presence = [...flow.slice(0, 2), { receive: { channel: "lobby", event: "presence:join" } }];
    expect(() => validateScript({ config: {}, scenarios: [{ engine: "cable", flow: presence }] }, ext)).not.toThrow();
    expect(problems([...connected, { receive: { channel: "chat", event: "newMessage" } }])[0]).toMatch(/Action Cable messages have no event name/);
  });

  test("AnyCable steps need the extended protocol, streams their secret, and publish its own shape", () => {
    const base = [{ connect: {} }, { subscribe: { stream: "news", as: "news" } }];
    expect(problems([...base, { whisper: { channel: "news", data: { t: 1 } } }])).toEqual([
      'scenario "s", step 3 (whisper): needs AnyCable\'s extended protocol: set config.cable.anycable.extended',
    ]);
    expect(problems([{ connect: {} }, { subscribe: { signedStream: "secret-room" } }])).toEqual([
      'scenario "s", step 2 (subscribe): "signedStream" needs ANYCABLE_STREAMS_SECRET or config.cable.anycable.streamsSecret',
    ]);
    expect(problems([{ connect: {} }, { subscribe: { stream: "a", channel: "C" } }])[0]).toMatch(/"stream" is a \$pubsub stream/);
    expect(problems([{ publish: { stream: "news", data: { a: 1 } } }])).toEqual([]);
    expect(problems([{ publish: { channel: "news", event: "e" } }])).toEqual([
      'scenario "s", step 1 (publish): Action Cable publishes to AnyCable "stream" or "streams" (no channel or event)',
    ]);
    expect(problems([...base, { listen: { channel: "news", for: 1 } }])).toEqual([]);
  });

  test("config.cable is checked too, with defaults", () => {
    expect(parseConfig(undefined)).toEqual({
      protocol: "actioncable",
      timeout: 10,
      headers: {},
      stampField: "ts",
      inboxSize: 256,
      lagWarning: 100,
      reconnect: { initialDelay: 0.5, maxDelay: 5, timeout: 30 },
      preciseArrivals: false,
      maxFailedUsers: 0,
      anycable: { extended: "off", restoreWith: "query" },
    });
    expect(parseConfig({ maxFailedUsers: "5%" }).maxFailedUsers).toBe("5%");
    expect(parseConfig({ maxFailedUsers: false }).maxFailedUsers).toBe(false);
    expect(() => parseConfig({ maxFailedUsers: "five" })).toThrow(/config.cable: field "maxFailedUsers": expected a count, a share such as "5%", or false/);
    expect(parseConfig({}, { ANYCABLE_STREAMS_SECRET: "s", ANYCABLE_BROADCAST_KEY: "k" }).anycable).toMatchObject({ streamsSecret: "s", broadcastKey: "k" });
    expect(() => parseConfig({ localAddress: ["127.0.0.2", "localhost"] })).toThrow(/config.cable: field "localAddress.1": Invalid ip/);
    expect(() => parseConfig({ protocol: "socketio" })).toThrow(/config.cable: field "protocol"/);
    expect(() => parseConfig({ timeout: 10, timout: 5 })).toThrow(/config.cable: unknown field "timout"/);
    expect(parseConfig({ protocol: "pusher", pusher: { key: "k" } }, { PUSHER_APP_SECRET: "from-env" }).pusher?.secret).toBe("from-env");
    expect(parseConfig({ protocol: "pusher", pusher: { key: "k", secret: "own" } }, { PUSHER_APP_SECRET: "from-env" }).pusher?.secret).toBe("own");
    expect(() => parseConfig({ protocol: "pusher" })).toThrow(/config.cable: field "pusher": protocol pusher needs pusher.key/);
  });
});
