// Scenario mistakes through the real `artillery run`: each stops the run before any load with one
// message that names the scenario, the step and the field, no stack trace, no "could not be
// loaded", a non-zero exit and no VU. A correct copy of the same scenario runs (the control), so
// the failures come from the mistakes and not from the harness.
import { counter, runArtillery, type ArtilleryRun } from "cable-test-servers";
import { startTarget, type LocalTarget } from "cable-local-target";
import { afterAll, beforeAll, describe, expect, test } from "vitest";

let target: LocalTarget;
beforeAll(async () => {
  target = await startTarget({ port: 0 });
});
afterAll(() => target?.close());

type Script = { config: Record<string, any>; scenarios: Record<string, any>[]; before?: Record<string, any> };

function chat(): Script {
  return {
    config: {
      target: target.cableUrl,
      engines: { cable: {} },
      cable: { timeout: 5 },
      phases: [{ duration: 1, arrivalCount: 2 }],
    },
    scenarios: [
      {
        name: "chat",
        engine: "cable",
        flow: [
          { connect: { cookies: { uid: "u-{{ $uuid }}" } } },
          { subscribe: { channel: "ChatChannel", params: { id: "cli" }, as: "chat" } },
          { perform: { channel: "chat", action: "speak", data: { message: "hi" } } },
          { receive: { channel: "chat", timeout: 5 } },
        ],
      },
    ],
  };
}

function pusherPublish(): Script {
  return {
    config: {
      target: target.url,
      engines: { cable: {} },
      cable: { protocol: "pusher", timeout: 5, pusher: { key: target.pusher.key, appId: target.pusher.appId } },
      phases: [{ duration: 1, arrivalCount: 1 }],
    },
    scenarios: [
      {
        name: "announce",
        engine: "cable",
        flow: [{ connect: null }, { subscribe: { channel: "news" } }, { publish: { channel: "news", event: "post", data: { n: 1 } } }],
      },
    ],
  };
}

const NO_SECRET = { PUSHER_APP_SECRET: "" };

interface BadInput {
  script: () => Script;
  env?: NodeJS.ProcessEnv;
  /** Every one must appear in the message. */
  says: string[];
}

const bad: Record<string, BadInput> = {
  "a misspelled config.cable option": {
    script: () => Object.assign(chat(), { config: { ...chat().config, cable: { timout: 5 } } }),
    says: ['config.cable: unknown field "timout"', 'did you mean "timeout"'],
  },
  "a misspelled step field": {
    script: () => {
      const s = chat();
      s.scenarios[0].flow[3] = { receive: { chanel: "chat", timeout: 5 } };
      return s;
    },
    says: ['scenario "chat", step 4 (receive)', 'unknown field "chanel"', 'did you mean "channel"'],
  },
  "a misspelled step name": {
    script: () => {
      const s = chat();
      s.scenarios[0].flow[1] = { subscibe: { channel: "ChatChannel", as: "chat" } };
      return s;
    },
    says: ['scenario "chat", step 2', 'unknown step "subscibe"', 'did you mean "subscribe"'],
  },
  "a wrong type": {
    script: () => Object.assign(chat(), { config: { ...chat().config, cable: { timeout: "ten" } } }),
    says: ['config.cable: field "timeout"', "Expected number, received string"],
  },
  "a missing secret": {
    script: pusherPublish,
    env: NO_SECRET,
    says: ['scenario "announce", step 3 (publish)', "PUSHER_APP_SECRET"],
  },
  "a missing environment variable": {
    script: () => {
      const s = chat();
      s.scenarios[0].flow[0] = { connect: { headers: { Authorization: "Bearer {{ $env.CABLE_TEST_TOKEN_NEVER_SET }}" } } };
      return s;
    },
    says: ['scenario "chat", step 1', "CABLE_TEST_TOKEN_NEVER_SET", "not set"],
  },
  "a receive on a channel never subscribed": {
    script: () => {
      const s = chat();
      s.scenarios[0].flow[3] = { receive: { channel: "lobby", timeout: 5 } };
      return s;
    },
    says: ['scenario "chat", step 4 (receive)', 'field "channel"', '"lobby" is not subscribed'],
  },
  "a target that is not a URL": {
    script: () => Object.assign(chat(), { config: { ...chat().config, target: "localhost:3000/cable" } }),
    says: ["config.target", '"localhost:3000/cable"', "ws://"],
  },
  "a target with a scheme no socket speaks": {
    script: () => Object.assign(chat(), { config: { ...chat().config, target: "ftp://127.0.0.1/cable" } }),
    says: ["config.target", "ftp"],
  },
  "a mistake in a before hook (checked in Artillery's main thread)": {
    script: () => ({ ...chat(), before: { engine: "cable", flow: [{ connect: null }, { lisen: { for: 1 } }] } }),
    says: ["before hook, step 2", 'unknown step "lisen"', 'did you mean "listen"'],
  },
};

function expectStoppedCleanly(run: ArtilleryRun, says: string[]): void {
  expect(run.code, run.output).not.toBe(0);
  expect(run.code, run.output).not.toBeNull();
  for (const phrase of says) expect(run.output).toContain(phrase);
  // One message: the engine's report appears once.
  expect(run.output.split("artillery-engine-cable: the scenario has").length - 1, run.output).toBe(1);
  expect(run.output).not.toMatch(/^\s+at .+:\d+:\d+\)?$/m);
  expect(run.output).not.toContain("could not be loaded");
  expect(run.output).not.toContain("TypeError");
  expect(run.output).not.toContain("Phase started");
  if (run.report) expect(counter(run.report, "vusers.created")).toBe(0);
}

describe.concurrent("a scenario mistake stops `artillery run` before any load", () => {
  test("the control: the correct scenarios run", async () => {
    const [ok, publish] = await Promise.all([
      runArtillery({ script: chat(), timeoutMs: 60_000 }),
      runArtillery({ script: pusherPublish(), env: { PUSHER_APP_SECRET: target.pusher.secret }, timeoutMs: 60_000 }),
    ]);
    expect(ok.code, ok.output).toBe(0);
    expect(counter(ok.report!, "vusers.completed")).toBe(2);
    expect(publish.code, publish.output).toBe(0);
    expect(counter(publish.report!, "vusers.completed")).toBe(1);
  });

  test.each(Object.entries(bad))("%s", async (_name, input) => {
    const run = await runArtillery({ script: input.script(), env: input.env, timeoutMs: 60_000 });
    expectStoppedCleanly(run, input.says);
  });
});
