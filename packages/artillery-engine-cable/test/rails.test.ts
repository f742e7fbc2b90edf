// The engine against a real Rails 6.1 Action Cable server (puma), through the real `artillery run`.
import { mkdtempSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { counter, runArtillery, samples, startRails, type RailsServer } from "cable-test-servers";
import { afterAll, beforeAll, describe, expect, test } from "vitest";

const repo = path.resolve(__dirname, "../../..");
let rails: RailsServer;

beforeAll(async () => {
  rails = await startRails();
});
afterAll(() => rails?.stop());


describe("Rails Action Cable", () => {
  test("the chat scenario: every user speaks 5 times and gets each message back", async () => {
    const run = await runArtillery({
      script: path.join(repo, "scenarios/chat.yml"),
      args: ["--target", rails.url, "--overrides", JSON.stringify({ config: { phases: [{ duration: 2, arrivalCount: 4 }] } })],
    });
    expect(run.code, run.output).toBe(0);
    const r = run.report!;
    expect(counter(r, "vusers.created")).toBe(4);
    expect(counter(r, "vusers.completed")).toBe(4);
    expect(counter(r, "vusers.failed")).toBe(0);
    expect(counter(r, "cable.connections")).toBe(4);
    expect(counter(r, "cable.subscriptions")).toBe(4);
    expect(counter(r, "cable.messages_sent")).toBe(20);
    expect(samples(r, "cable.rtt")).toBe(20);
    expect(samples(r, "cable.handshake_latency")).toBe(4);
    expect(samples(r, "cable.subscription_latency")).toBe(4);
    // Everyone in the room gets everyone's messages: at least their own 20, each stamped.
    expect(counter(r, "cable.messages_received")).toBeGreaterThanOrEqual(20);
    expect(samples(r, "cable.broadcast_latency")).toBe(counter(r, "cable.messages_received"));
    expect(counter(r, "cable.connections_open_period_peak")).toBeGreaterThanOrEqual(1);
    expect(r.aggregate.summaries["cable.rtt"].max).toBeLessThan(5_000);
    expect(Object.keys(r.aggregate.counters).filter((k) => k.startsWith("errors."))).toEqual([]);
  });

  test("rejections, unauthorized users, server disconnects and timeouts are named errors, each VU ending once", async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), "rails-errors-"));
    writeFileSync(
      path.join(dir, "processor.js"),
      `module.exports = {
        // callback style
        checkCaptured(context, events, done) {
          if (context.vars.said === "captured " + context.vars.$uuid) events.emit("counter", "test.captured", 1);
          done();
        },
        // promise style
        async checkAuthor(context, events) {
          if (context.vars.author === context.vars.$uuid) events.emit("counter", "test.author", 1);
        },
      };`,
    );
    const cookie = { cookies: { uid: "Kay/{{ $uuid }}" } };
    const run = await runArtillery({
      outputDir: dir,
      script: {
        config: {
          target: rails.url,
          processor: "./processor.js",
          engines: { cable: {} },
          cable: { timeout: 3 },
          phases: [{ duration: 3, arrivalCount: 30 }],
        },
        scenarios: [
          { name: "rejected", engine: "cable", flow: [{ connect: cookie }, { subscribe: { channel: "RejectChannel" } }] },
          { name: "anonymous", engine: "cable", flow: [{ connect: {} }, { subscribe: { channel: "ChatChannel", params: { id: 1 } } }] },
          {
            name: "kicked",
            engine: "cable",
            flow: [
              { connect: cookie },
              { subscribe: { channel: "ChatChannel", params: { id: "kick" }, as: "chat" } },
              { perform: { channel: "chat", action: "leave" } },
              { receive: { channel: "chat" } },
            ],
          },
          {
            name: "waiting",
            engine: "cable",
            flow: [
              { connect: cookie },
              { subscribe: { channel: "ChatChannel", params: { id: "quiet-{{ $uuid }}" }, as: "chat" } },
              { receive: { channel: "chat", timeout: 1 } },
            ],
          },
          {
            name: "capturing",
            engine: "cable",
            flow: [
              { connect: cookie },
              { subscribe: { channel: "ChatChannel", params: { id: "cap-{{ $uuid }}" }, as: "chat" } },
              { perform: { channel: "chat", action: "speak", data: { message: "captured {{ $uuid }}" } } },
              { receive: { channel: "chat", capture: [{ json: "$.message", as: "said" }, { json: "$.author_id", as: "author" }] } },
              { function: "checkCaptured" },
              { function: "checkAuthor" },
              { think: 0.2 },
            ],
          },
        ],
      },
    });
    // All but the capturing users fail on purpose: over config.cable.maxFailedUsers (default 0), the run exits 1 and says why.
    expect(run.code, run.output).toBe(1);
    expect(run.output).toMatch(/cable: 1 virtual user failed, more than config\.cable\.maxFailedUsers \(0\): artillery run will exit 1\./);
    const r = run.report!;
    const by = (name: string) => counter(r, `vusers.created_by_name.${name}`);
    for (const name of ["rejected", "anonymous", "kicked", "waiting", "capturing"]) expect(by(name), name).toBeGreaterThan(0);
    expect(counter(r, "vusers.created")).toBe(30);
    expect(counter(r, "vusers.completed") + counter(r, "vusers.failed")).toBe(30);
    expect(counter(r, "errors.cable.subscription_rejected")).toBe(by("rejected"));
    // Rails sends no reason with reject_subscription: the cause is the app's own `reject`.
    expect(counter(r, "cable.subscription_rejected.app_rejected")).toBe(by("rejected"));
    expect(counter(r, "errors.cable.unauthorized")).toBe(by("anonymous"));
    expect(counter(r, "errors.cable.server_disconnect")).toBe(by("kicked"));
    expect(counter(r, "errors.cable.receive_timeout")).toBe(by("waiting"));
    expect(counter(r, "vusers.completed")).toBe(by("capturing"));
    expect(counter(r, "test.captured")).toBe(by("capturing"));
    expect(counter(r, "test.author")).toBe(by("capturing"));
    expect(run.output).not.toMatch(/unhandled|UnhandledPromiseRejection/i);
  });

  test("a scenario mistake stops the run before any virtual user starts, naming the step and field", async () => {
    const run = await runArtillery({
      script: {
        config: { target: rails.url, engines: { cable: {} }, phases: [{ duration: 1, arrivalCount: 2 }] },
        scenarios: [
          {
            name: "typo",
            engine: "cable",
            flow: [{ connect: {} }, { subscribe: { channel: "ChatChannel", as: "chat" } }, { perform: { channel: "chat", actoin: "speak" } }],
          },
        ],
      },
    });
    expect(run.code).not.toBe(0);
    expect(run.output).toContain('scenario "typo", step 3 (perform): unknown field "actoin"');
    expect(run.output).toContain('scenario "typo", step 3 (perform): field "action": Required');
    expect(run.report?.aggregate.counters["cable.connections"] ?? 0).toBe(0);
  });
});
