// Test support: the texts a hostile server, scenario or folder name holds (issue 38), and the check
// that a report.md shows them inert: with fences and code spans set aside, no mention, issue
// reference, link, image, heading or raw tag that the report did not write itself.
import type { Marked as MarkedClass } from "marked" with { "resolution-mode": "import" };

export const HOSTILE_TEXTS = [
  "@octocat",
  "ping @octocat and @github/security",
  "[click](https://evil.example)",
  "![x](https://evil.example/t.png)",
  "</details><h1>pwned</h1>",
  "<details open>",
  '<meta http-equiv="refresh" content="0;url=https://evil.example">',
  "<style>table{display:none}</style>",
  '<script type="application/json" id="report-data">{}</script>',
  "``` fence ` tick `` two",
  "`",
  "a | b || c",
  "line one\nline two\r\n# heading\n- item\n> quote",
  "\u001b[31mred\u001b[0m \u001b]8;;https://evil.example\u0007link\u001b]8;;\u0007 \u001b[2J",
  "see https://evil.example and www.evil.example or mail me@evil.example, fixes #12",
  "*bold* _em_ ~~gone~~ \\ & &amp; &#60;b&#62;",
  "right-to-left \u202eevil\u202c text",
  "<!-- comment --> <![CDATA[x]]> <?php ?>",
  "[ref]: https://evil.example",
  "<https://evil.example>",
];

/** report.md's own raw HTML lines: its folds. */
const OWN_HTML = /^(<details>|<details><summary>[^<>&"]*<\/summary>|<\/details>)$/;

/** The markdown without fenced blocks and code spans (CommonMark: a run of n backticks closes at the next run of exactly n). */
export function outsideCode(markdown: string): string {
  const lines: string[] = [];
  let fence: string | null = null;
  for (const line of markdown.split("\n")) {
    const opening = /^ {0,3}(`{3,}|~{3,})/.exec(line);
    if (fence !== null) {
      if (opening && opening[1][0] === fence[0] && opening[1].length >= fence.length && line.trim() === opening[1]) fence = null;
      continue;
    }
    if (opening) {
      fence = opening[1];
      continue;
    }
    lines.push(line);
  }
  const text = lines.join("\n");
  let out = "";
  for (let i = 0; i < text.length; ) {
    if (text[i] === "\\") {
      out += text.slice(i, i + 2);
      i += 2;
      continue;
    }
    if (text[i] !== "`") {
      out += text[i++];
      continue;
    }
    const run = /^`+/.exec(text.slice(i))![0];
    const close = new RegExp(`(?<!\`)${run}(?!\`)`, "g");
    close.lastIndex = i + run.length;
    const end = close.exec(text);
    if (!end) {
      out += run;
      i += run.length;
      continue;
    }
    out += " ";
    i = end.index + run.length;
  }
  return out;
}

/** A character not escaped by a backslash (an even number of backslashes before it). */
const unescaped = (sign: string) => new RegExp(`(?<!\\\\)(?:\\\\\\\\)*${sign}`);

/**
 * What in report.md would render as markup or a link on GitHub, with fences and code spans set aside.
 * `headings`: the heading lines the report writes itself (any other line starting with # is one).
 */
export function liveMarkup(markdown: string, headings: RegExp = /^(## |### )/): string[] {
  const problems: string[] = [];
  const prose = outsideCode(markdown)
    .split("\n")
    .filter((line) => !OWN_HTML.test(line.trim()));
  for (const [n, line] of prose.entries()) {
    const found = (what: string) => problems.push(`${what}: ${JSON.stringify(line.slice(0, 160))} (prose line ${n + 1})`);
    // GitHub links these on the rendered text, where backslashes are gone.
    const shown = line.replace(/\\(.)/g, "$1");
    if (/@[A-Za-z0-9]/.test(shown)) found("a mention or e-mail address");
    if (/(^|[^\w&])#\d/.test(shown)) found("an issue reference");
    if (/:\/\/|www\./i.test(shown)) found("a URL");
    if (unescaped("<[A-Za-z/!?]").test(line)) found("a raw tag");
    if (unescaped("!?\\[").test(line)) found("a link or image");
    if (/^\s{0,3}#{1,6}(\s|$)/.test(line) && !headings.test(line)) found("a heading");
  }
  return problems;
}

/** The element names of markdown rendered as report.html renders it, less report.md's own. */
export function renderedTags(markdown: string): Set<string> {
  const { Marked } = require("marked") as { Marked: typeof MarkedClass };
  const html = new Marked({ gfm: true, async: false }).parse(markdown) as string;
  return new Set([...html.matchAll(/<([a-z][a-z0-9]*)/gi)].map((m) => m[1].toLowerCase()));
}
