// What the server says it is: read from the upgrade answer once per connection, counted as
// `cable.server_software.<identity>`; the cable-report plugin names it, with the target's URL
// redacted, in its sidecar.
import { existsSync, readFileSync } from "node:fs";
import { anycableBinary, counter, runArtillery, startAnyCable } from "cable-test-servers";
import { SERVER_SOFTWARE, startTarget, type LocalTarget } from "cable-local-target";
import { afterAll, beforeAll, beforeEach, describe, expect, test } from "vitest";
import { METRICS } from "../src/metrics.js";
import { cleanIdentity, countServerSoftware, MAX_DISTINCT_IDENTITIES, resetServerSoftwareForTest, serverIdentity } from "../src/server-software.js";

describe("serverIdentity: the upgrade answer's headers", () => {
  test.each([
    [{ server: "cable-local-target/0.1.0" }, "cable-local-target/0.1.0"],
    [{ server: "nginx/1.25.3 (Ubuntu)" }, "nginx/1.25.3"],
    [{ server: "Apache/2.4.41 (Ubuntu) OpenSSL/1.1.1f" }, "Apache/2.4.41"],
    [{ server: "cloudflare" }, "cloudflare"],
    // anycable-go answers no Server, but its version; behind a proxy, its own word wins
    [{ "x-anycable-version": "1.6.16" }, "anycable-go/1.6.16"],
    [{ server: "nginx/1.25.3", "x-anycable-version": "1.6.16" }, "anycable-go/1.6.16"],
    // Laravel Reverb and Soketi (uWebSockets.js)
    [{ "x-powered-by": "Laravel Reverb" }, "Laravel_Reverb"],
    [{ uwebsockets: "20" }, "uWebSockets/20"],
    // Sockudo: nothing
    [{ date: "Fri, 27 Nov 2026 21:06:58 GMT" }, undefined],
    [{}, undefined],
  ])("%j → %s", (headers, identity) => {
    expect(serverIdentity(headers)).toBe(identity);
  });

  test("untrusted text: no escape sequence, control character or odd sign, 60 characters at most", () => {
    expect(serverIdentity({ server: "\u001b[31mevil/1.0\u001b[0m \u0007(x)" })).toBe("evil/1.0");
    expect(serverIdentity({ server: `${"x".repeat(200)}/1` })).toBe("x".repeat(60));
    expect(serverIdentity({ server: "<script>alert(1)</script>" })).toBe("scriptalert1/script");
    expect(serverIdentity({ server: "\u202e\u0000" })).toBeUndefined();
    expect(cleanIdentity("a b\tc")).toBe("a_b_c");
    expect(cleanIdentity("./-")).toBeUndefined();
  });
});

describe("countServerSoftware", () => {
  beforeEach(() => resetServerSoftwareForTest());

  test("one counter per welcomed connection; at most 8 distinct names per thread; nothing when the server said nothing", () => {
    const emitted: string[] = [];
    const events = { emit: (_kind: string, name: string) => emitted.push(name) } as unknown as Parameters<typeof countServerSoftware>[0];
    countServerSoftware(events, undefined);
    for (let i = 0; i < 20; i++) countServerSoftware(events, `s/${i}`);
    countServerSoftware(events, "s/0");
    expect(emitted).toHaveLength(MAX_DISTINCT_IDENTITIES + 1);
    expect(new Set(emitted).size).toBe(MAX_DISTINCT_IDENTITIES);
    expect(emitted[0]).toBe(`${METRICS.serverSoftware}.s/0`);
  });
});

describe("against real servers", () => {
  let target: LocalTarget;
  beforeAll(async () => {
    target = await startTarget({ port: 0 });
  });
  afterAll(async () => {
    await target?.close();
  });

  const script = (url: string, users: number) => ({
    config: { target: url, engines: { cable: {} }, cable: { timeout: 5 }, phases: [{ duration: 1, arrivalCount: users }], plugins: { "cable-report": {} } },
    scenarios: [{ name: "user", engine: "cable", flow: [{ connect: { cookies: { uid: "u{{ $uuid }}" } } }, { think: 0.1 }, { disconnect: {} }] }],
  });

  test("the local target's Server header, counted per connection; the sidecar names it, the URL without credentials or query", async () => {
    expect(SERVER_SOFTWARE).toMatch(/^cable-local-target\/\d+\.\d+\.\d+$/);
    // (ws refuses a URL with a fragment: redactTarget's tests cover those)
    const secretUrl = target.cableUrl.replace("ws://", "ws://admin:pa55word@") + "?token=hush-hush";
    const run = await runArtillery({ script: script(secretUrl, 4) });
    expect(run.code, run.output).toBe(0);
    const r = run.report!;
    expect(counter(r, "cable.connections")).toBe(4);
    expect(counter(r, `${METRICS.serverSoftware}.${SERVER_SOFTWARE}`)).toBe(4);
    const sidecar = readFileSync(`${run.reportPath}.sketches.json`, "utf8");
    expect(JSON.parse(sidecar).target).toEqual({ url: target.cableUrl, server: SERVER_SOFTWARE });
    for (const secret of ["pa55word", "hush-hush"]) expect(sidecar).not.toContain(secret);
  });

  test.skipIf(!existsSync(anycableBinary()))("anycable-go: its X-AnyCable-Version header", async () => {
    const anycable = await startAnyCable();
    try {
      const run = await runArtillery({ script: script(anycable.url, 2) });
      expect(run.code, run.output).toBe(0);
      const names = Object.keys(run.report!.aggregate.counters).filter((n) => n.startsWith(`${METRICS.serverSoftware}.`));
      expect(names).toEqual([expect.stringMatching(/^cable\.server_software\.anycable-go\/1\.\d+\.\d+$/)]);
      expect(run.report!.aggregate.counters[names[0]]).toBe(2);
      expect(JSON.parse(readFileSync(`${run.reportPath}.sketches.json`, "utf8")).target.server).toBe(names[0].slice(`${METRICS.serverSoftware}.`.length));
    } finally {
      await anycable.stop();
    }
  });
});
