// The checks preflight.ts adds to the schema's (the CLI tests in cli-errors.test.ts show how a run
// stops on them): target and connect URLs, environment references, "did you mean".
import { mkdtempSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { describe, expect, test } from "vitest";
import { findProblems } from "../src/preflight.js";
import type { Script as ScriptLike } from "../src/script.js";

const script = (over: Partial<ScriptLike> & { flow?: unknown[]; target?: unknown; cable?: unknown } = {}): ScriptLike => ({
  config: { target: "target" in over ? over.target : "ws://127.0.0.1:3000/cable", engines: { cable: {} }, cable: over.cable ?? {} },
  scenarios: [{ name: "s", engine: "cable", flow: over.flow ?? [{ connect: null }, { subscribe: { channel: "ChatChannel", as: "chat" } }] }],
  ...(over._scriptPath ? { _scriptPath: over._scriptPath } : {}),
});

describe("findProblems", () => {
  test("a correct script has none", () => {
    expect(findProblems(script(), {}).problems).toEqual([]);
  });

  test("targets: not a URL, a wrong scheme, none at all; a templated one is left to run time", () => {
    expect(findProblems(script({ target: "example.com/cable" }), {}).problems.join("\n")).toContain('config.target: "example.com/cable" is not a URL');
    expect(findProblems(script({ target: "mailto:x@y" }), {}).problems.join("\n")).toContain("scheme mailto");
    expect(findProblems(script({ target: "localhost:3000/cable" }), {}).problems).toEqual(['config.target: "localhost:3000/cable" has no scheme; did you mean "ws://localhost:3000/cable"?']);
    expect(findProblems(script({ target: undefined }), {}).problems.join("\n")).toContain('scenario "s", step 1 (connect): no "url" and config.target is not set');
    expect(findProblems(script({ target: "{{ target }}" }), {}).problems).toEqual([]);
    expect(findProblems(script({ target: "https://app.example.com/cable" }), {}).problems).toEqual([]);
  });

  test("a connect url inside a loop is checked too", () => {
    const flow = [{ loop: [{ connect: { url: "htp//nope" } }, { disconnect: null }], count: 2 }];
    expect(findProblems(script({ flow }), {}).problems.join("\n")).toContain('scenario "s", step 1 loop step 1 (connect): field "url"');
  });

  test("environment references: in steps (with the step), once per name, and set ones pass", () => {
    const flow = [{ connect: { headers: { a: "{{ $env.TOKEN }}", b: "{{ $processEnvironment.TOKEN }}" } } }, { loop: [{ think: "{{ $env.PAUSE }}" }], count: 1 }];
    const problems = findProblems(script({ flow }), {}).problems;
    expect(problems.filter((p) => p.includes("TOKEN"))).toEqual(['scenario "s", step 1: refers to the environment variable TOKEN ({{ $env.TOKEN }}), which is not set']);
    expect(problems.join("\n")).toContain('scenario "s", step 2 loop step 1: refers to the environment variable PAUSE');
    expect(findProblems(script({ flow }), { TOKEN: "t", PAUSE: "1" }).problems).toEqual([]);
  });

  test("environment references in config, which Artillery renders before the engine sees it, are read from the file", () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), "preflight-"));
    const file = path.join(dir, "s.yml");
    writeFileSync(file, "# {{ $env.IN_A_COMMENT }}\nconfig:\n  cable:\n    headers: { Authorization: \"Bearer {{ $env.API_KEY }}\" }\n");
    const problems = findProblems(script({ _scriptPath: file }), {}).problems;
    expect(problems).toEqual([`${file}: refers to the environment variable API_KEY ({{ $env.API_KEY }}), which is not set`]);
  });

  test("did you mean: config options and step fields within two edits", () => {
    expect(findProblems(script({ cable: { stampFeild: "t" } }), {}).problems).toEqual(['config.cable: unknown field "stampFeild"; did you mean "stampField"?']);
    const flow = [{ connect: { cookie: "a=b" } }];
    expect(findProblems(script({ flow }), {}).problems.join("\n")).toContain('unknown field "cookie"; did you mean "cookies"?');
    expect(findProblems(script({ cable: { zzzzzz: 1 } }), {}).problems).toEqual(['config.cable: unknown field "zzzzzz"']);
  });

  test("HTTP steps: checked before the load like every step, each mistake with its step and field", () => {
    const flow = [
      { get: { url: "/login", capture: { regexp: 'name="_token" value="([^"]+)"', group: 1, as: "token" } } },
      { post: { url: "/login", form: { _token: "{{ token }}" }, json: { a: 1 } } },
      { post: { url: "/login", capture: { regexp: "([a-z", as: "x" } } },
      { get: { url: "/me", capture: { json: "user.id", as: "id" } } },
      { get: { url: "/me", foloowRedirect: false } },
      { delete: { url: "ftp://example.com/x", expect: 1000 } },
      { patch: { url: "/me", capture: { selector: "meta", as: "x" } } },
    ];
    const problems = findProblems(script({ flow }), {}).problems;
    expect(problems).toEqual([
      'scenario "s", step 2 (post): field "(value)": give one body: "json", "form" or "body"',
      expect.stringMatching(/^scenario "s", step 3 \(post\): field "capture.regexp": Invalid regular expression/),
      'scenario "s", step 4 (get): field "capture.json": a JSONPath starts with "$"',
      'scenario "s", step 5 (get): unknown field "foloowRedirect"; did you mean "followRedirect"?',
      'scenario "s", step 6 (delete): field "expect": Number must be less than or equal to 599',
      // Artillery's `selector` (cheerio) is not one of the engine's captures: the closest form is named.
      'scenario "s", step 7 (patch): field "capture.json": Required',
      'scenario "s", step 7 (patch): unknown field "selector"',
    ]);
    // A relative URL needs somewhere to go: the target's origin, or config.cable.http.
    const relative = [{ get: { url: "/login" } }];
    expect(findProblems(script({ flow: relative, target: undefined }), {}).problems).toEqual(['scenario "s", step 1 (get): field "url": "/login" is relative, and there is no config.target or config.cable.http to resolve it against']);
    expect(findProblems(script({ flow: relative, target: undefined, cable: { http: "http://127.0.0.1:8000" } }), {}).problems).toEqual([]);
    expect(findProblems(script({ flow: [{ get: { url: "ftp://x/y" } }] }), {}).problems).toEqual(['scenario "s", step 1 (get): field "url": an HTTP step\'s url is http(s) or a path, not ftp:']);
  });

  test("a per-user authEndpoint: Artillery renders config once, so its templates are read back from the file and kept for each user", () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), "preflight-"));
    const file = path.join(dir, "s.yml");
    writeFileSync(
      file,
      'config:\n  cable:\n    protocol: pusher\n    pusher:\n      key: k\n      authEndpoint:\n        url: "{{ $env.APP }}/broadcasting/auth"\n        headers: { X-CSRF-TOKEN: "{{ csrf }}", Authorization: "Bearer {{ token }}" }\n',
    );
    // What Artillery hands the engine: `{{ csrf }}` alone rendered to undefined, the others with "undefined" in them.
    const rendered = { protocol: "pusher", pusher: { key: "k", authEndpoint: { url: "http://app/broadcasting/auth", headers: { "X-CSRF-TOKEN": undefined, Authorization: "Bearer undefined" } } } };
    const { problems, settings } = findProblems({ ...script({ cable: rendered }), _scriptPath: file }, { APP: "http://app" });
    expect(problems).toEqual([]);
    // The per-user templates come back; what Artillery rendered right ($env, an --overrides url) stays.
    expect(settings!.pusher!.authEndpoint).toEqual({ url: "http://app/broadcasting/auth", headers: { "X-CSRF-TOKEN": "{{ csrf }}", Authorization: "Bearer {{ token }}" } });
    const overridden = { ...rendered, pusher: { ...rendered.pusher, authEndpoint: { ...rendered.pusher.authEndpoint, url: "http://127.0.0.1:9999/broadcasting/auth" } } };
    expect(findProblems({ ...script({ cable: overridden }), _scriptPath: file }, { APP: "http://app" }).settings!.pusher!.authEndpoint!.url).toBe("http://127.0.0.1:9999/broadcasting/auth");
    // Without the file, the rendered value is what there is, and a header that is not text is named.
    expect(findProblems(script({ cable: rendered }), {}).problems.join("\n")).toContain('config.cable: field "pusher.authEndpoint');
  });

  test("a script without cable scenarios is not the engine's to check", () => {
    const s: ScriptLike = { config: { target: "not a url", engines: { cable: {} } }, scenarios: [{ engine: "http", flow: [{ get: { url: "{{ $env.NOPE }}" } }] }] };
    expect(findProblems(s, {}).problems).toEqual([]);
  });
});
