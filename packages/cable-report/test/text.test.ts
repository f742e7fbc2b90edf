// The rule for text from outside (src/text.ts), checked by rendering: every hostile text, escaped for
// markdown or quoted in a code span, is rendered by marked (GFM, as report.html renders report.md)
// and must come out as the same text with no element of its own.
import type { Marked as MarkedClass } from "marked" with { "resolution-mode": "import" };
import { describe, expect, it } from "vitest";
import { chartLabel, code, inline, LIMITS, plain, truncate } from "../src/text.js";
import { HOSTILE_TEXTS } from "./hostile-text.js";

const { Marked } = require("marked") as { Marked: typeof MarkedClass };
const marked = new Marked({ gfm: true, async: false });

const WORD_JOINER = /\u2060/g;

/** The text of rendered HTML, as a browser shows it (tags dropped, entities decoded). */
function textOf(html: string): string {
  return html
    .replace(/<[^>]*>/g, "")
    .replace(/&lt;/g, "<")
    .replace(/&gt;/g, ">")
    .replace(/&quot;/g, '"')
    .replace(/&#39;/g, "'")
    .replace(/&amp;/g, "&")
    .trim();
}

/** Elements of the rendered HTML beyond the wrapper given. */
const tags = (html: string) => [...html.matchAll(/<([a-z][a-z0-9]*)/gi)].map((m) => m[1].toLowerCase());

describe("plain: one line of printable text, capped", () => {
  it("turns line breaks, terminal escapes and bidirectional overrides into single spaces", () => {
    expect(plain("a\nb\r\nc\u2028d")).toBe("a b c d");
    expect(plain("\u001b[31mred\u001b[0m")).toBe("[31mred [0m");
    expect(plain("x\u202ey\u2066z")).toBe("x y z");
    expect(plain("  a \t  b  ")).toBe("a b");
  });

  it("caps at the given length with an ellipsis, never splitting a surrogate pair", () => {
    expect(plain("x".repeat(500))).toHaveLength(LIMITS.note);
    expect(plain("abcdef", 4)).toBe("abc…");
    expect(truncate("ab😀cd", 4)).toBe("ab…");
    expect(inline("y".repeat(1_000), LIMITS.name).replace(/\\/g, "")).toHaveLength(LIMITS.name);
    expect(code("z".repeat(1_000))).toHaveLength(LIMITS.quote + 2);
  });
});

describe("inline: markdown prose and table cells", () => {
  it.each(HOSTILE_TEXTS)("%j renders as its own text and nothing else", (raw) => {
    const html = marked.parseInline(inline(raw)) as string;
    expect(tags(html)).toEqual([]);
    expect(textOf(html).replace(WORD_JOINER, "")).toBe(plain(raw));
  });

  it("breaks what GitHub links on the rendered text: mentions, issue references, e-mail addresses, URLs", () => {
    const shown = inline("@octocat #12 me@evil.example https://evil.example WWW.evil.example").replace(/\\/g, "");
    expect(shown).not.toMatch(/@[a-z0-9]/i);
    expect(shown).not.toMatch(/#\d/);
    expect(shown).not.toMatch(/:\/\//);
    expect(shown).not.toMatch(/www\./i);
  });

  it("keeps a table row's cells whatever the text holds", () => {
    const row = `| ${inline("a | b\n| c |")} | ${inline("`|`")} |`;
    const html = marked.parse(`| x | y |\n|--|--|\n${row}\n`) as string;
    expect(html.match(/<td>/g)).toHaveLength(2);
    expect(textOf(html.slice(html.indexOf("<tbody>")))).toContain("a | b | c |");
  });

  it("leaves plain names as they are", () => {
    expect(inline("eu-west-2")).toBe("eu-west-2");
    expect(inline("chat.yml: steady 60 s, 10/s")).toBe("chat.yml: steady 60 s, 10/s");
  });
});

describe("code: quoted text in a code span", () => {
  it.each(HOSTILE_TEXTS)("%j renders as one code span of its own text", (raw) => {
    const html = marked.parseInline(`said ${code(raw)}.`) as string;
    expect(tags(html)).toEqual(["code"]);
    expect(textOf(html)).toBe(`said ${plain(raw, LIMITS.quote)}.`);
  });

  it("in a table cell, keeps the row's cells and shows | as written", () => {
    const html = marked.parse(`| a | b |\n|--|--|\n| ${code("x | y `z`", LIMITS.quote, true)} | 1 |\n`) as string;
    expect(html.match(/<td>/g)).toHaveLength(2);
    expect(html).toContain("<code>x | y `z`</code>");
  });

  it("shows an empty text as a dash", () => {
    expect(code(" \n ")).toBe("—");
  });
});

describe("chartLabel: a mermaid label", () => {
  it("keeps letters, digits and a few signs, and nothing that ends the label or makes markup", () => {
    expect(chartLabel('eu-west-2 "x" <b>#1;</b> `y`')).toBe("eu-west-2 'x' 'b''1''/b' 'y'");
    expect(chartLabel("a".repeat(100))).toHaveLength(40);
  });
});
