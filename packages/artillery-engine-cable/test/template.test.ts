// Captured values are data (issue 50): a value the app answered is never rendered as a template
// again. The engine's one renderer (src/template.ts) against Artillery's own, whose renderVariables
// searches its result again: same output wherever no value holds a template, and where one does,
// Artillery's re-renders it (the leak, or a loop for ever) and the engine's keeps it as text.
import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import fc from "fast-check";
import { beforeAll, describe, expect, test } from "vitest";
import { pathToFileURL } from "node:url";
import { render } from "../src/template.js";
import { compileLoop, compileThink } from "../src/steps/flow.js";
import type { Compiler } from "../src/steps/compiler.js";
import type { StepFn } from "../src/vu.js";

// Artillery's internals are not in its exports: its own file, by path.
const engineUtil = path.resolve(__dirname, "../../../node_modules/artillery/dist/lib/commons/engine_util.js");
let artilleryTemplate: <T>(value: T, context: unknown) => T;
let helpers: Compiler["helpers"];
beforeAll(async () => {
  const util = await import(pathToFileURL(engineUtil).href);
  artilleryTemplate = util.template;
  helpers = util as Compiler["helpers"];
});

const SECRET = "s3cr3t-from-the-generator";
const hostile = ["{{ $processEnvironment.PROBE_SECRET }}", "{{ $env.PROBE_SECRET }}", "{{ token }}", "{{{ token }}}", "{{ $randomString(8) }}", "a{{ token }}b{{ $env.PROBE_SECRET }}"];

const context = (vars: Record<string, unknown>) => ({
  vars: { $env: { PROBE_SECRET: SECRET }, $processEnvironment: { PROBE_SECRET: SECRET }, ...vars },
  funcs: { $randomNumber: (a: number, b: number) => a + b, $randomString: (n = 10) => "r".repeat(n) },
});

describe("the engine's renderer", () => {
  test("renders as Artillery does where no value holds a template", () => {
    const vars = { user: { id: 7, name: "Kay" }, rows: [{ id: "r0" }], token: "abc", n: 0, flag: false, empty: "", "dotted.name": "d" };
    const cases = [
      "Bearer {{ token }}",
      "{{ token }}",
      "{{ user.id }}",
      "{{ user }}",
      "id={{ user.id }}&x={{ user }}",
      "{{ rows[0].id }}",
      "{{ n }}",
      "{{ flag }}",
      "{{ empty }}",
      "{{ missing }}",
      "x{{ missing }}y",
      "{{ $randomNumber(1, 2) }}",
      "n{{ $randomNumber(1,2) }}",
      "{{{ token }}}",
      "{{ a + b }}",
      "no template",
      "{{ dotted.name }}",
      { "{{ token }}": ["{{ user.id }}", { deep: "{{ rows[0].id }}" }], plain: 3, nil: null },
    ];
    for (const value of cases) expect(render(value, context(vars)), JSON.stringify(value)).toEqual(artilleryTemplate(value, context(vars)));
  });

  test("a value that holds a template is sent as text, never rendered: no secret, no loop", () => {
    for (const token of hostile) {
      const vars = { token };
      const out = render({ url: "/echo?t={{ token }}", headers: { Authorization: "Bearer {{ token }}" }, json: ["{{ token }}"], body: "{{ token }}" }, context(vars));
      expect(JSON.stringify(out)).not.toContain(SECRET);
      expect(out.headers.Authorization).toBe(`Bearer ${token}`);
      expect(out.body).toBe(token);
    }
    // Artillery's own renders the first in turn (the leak the issue found).
    expect(artilleryTemplate("Bearer {{ token }}", context({ token: hostile[0] }))).toBe(`Bearer ${SECRET}`);
  });

  test("walks every field a step's value has, at any depth, keys included: property", () => {
    const leaf = fc.oneof(fc.constantFrom("{{ token }}", "x {{ token }} y", "{{ $env.PROBE_SECRET }}"), fc.string(), fc.integer(), fc.boolean(), fc.constant(null));
    const key = fc.oneof(fc.constantFrom("{{ token }}", "k"), fc.string({ minLength: 1, maxLength: 5 }));
    const tree = fc.letrec((tie) => ({
      node: fc.oneof({ depthSize: "small" }, leaf, fc.array(tie("node"), { maxLength: 4 }), fc.dictionary(key, tie("node"), { maxKeys: 4 })),
    })).node;
    fc.assert(
      fc.property(tree, fc.constantFrom(...hostile), (value, token) => {
        const out = JSON.stringify(render(value, context({ token })));
        // Every `{{ token }}` became the hostile text, which stays as it came; the scenario's own `$env` is the author's.
        const expected = JSON.stringify(value).replaceAll("{{ $env.PROBE_SECRET }}", SECRET);
        const count = (text: string, part: string) => text.split(part).length - 1;
        expect(count(out, SECRET), `${JSON.stringify(value)} with ${token} gave ${out}`).toBe(count(expected, SECRET));
      }),
      { numRuns: 300 },
    );
  });
});

describe("Artillery's think and loop helpers get the engine's rendering first", () => {
  const ends = (step: StepFn, vars: Record<string, unknown>) =>
    new Promise<string>((resolve) => step(context(vars), (err) => resolve(err ? (err as { code?: string }).code ?? "error" : "done")));
  const compiler = () => ({ helpers, thinkDefaults: {}, processor: {}, compile: () => ((c: never, cb: (e: null, c: never) => void) => cb(null, c)) as never }) as unknown as Compiler;

  test("a think time or a loop count captured as a template is refused, not rendered for ever", async () => {
    expect(await ends(compileThink(compiler(), { think: "{{ wait }}" }), { wait: "{{ wait }}" })).toBe("cable.invalid_value");
    expect(await ends(compileThink(compiler(), { think: "{{ wait }}" }), { wait: "0.01" })).toBe("done");
    expect(await ends(compileLoop(compiler(), { loop: [{ think: 0 }], count: "{{ n }}" }), { n: "{{ n }}" })).toBe("cable.invalid_value");
    expect(await ends(compileLoop(compiler(), { loop: [{ think: 0 }], count: "{{ n }}" }), { n: 3 })).toBe("done");
  });
});

describe("the rule lives in one place", () => {
  const src = path.resolve(__dirname, "../src");
  const files = (dir: string): string[] => readdirSync(dir, { withFileTypes: true }).flatMap((e) => (e.isDirectory() ? files(path.join(dir, e.name)) : e.name.endsWith(".ts") ? [path.join(dir, e.name)] : []));

  test("no source file renders a template but through template.ts: Artillery's template is not called", () => {
    const callers = files(src).filter((f) => path.basename(f) !== "template.ts" && /\.template\s*\(|renderVariables/.test(readFileSync(f, "utf8")));
    expect(callers.map((f) => path.relative(src, f))).toEqual([]);
  });
});
