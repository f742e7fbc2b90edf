// The one rule for text from outside the report's own code (a server's words, scenario and phase
// names, `--title`, error and metric names, region and task names read from folders, reasons that
// quote a file): it is shown as text, never as markup, in every renderer, and never longer than its
// cap. report.md goes into a pull request, where GitHub turns `@name` into a ping, `#12` and URLs
// into links, `![x](…)` into a request for an image, and raw HTML into page structure; report.html
// is opened by people who trust it. So:
// - every outside text first becomes one line of printable characters (`plain`): no line break can
//   start a heading, a list or an HTML block, no terminal escape or bidirectional override survives;
// - in markdown prose and table cells (`inline`, `cell`) each character markdown or HTML gives a
//   meaning to is backslash-escaped, and the patterns GitHub links after rendering (on the text,
//   where escapes are gone: mentions, issue references, e-mail addresses, URLs) are broken by an
//   invisible WORD JOINER (U+2060);
// - quoted texts go in code spans (`code`), which GitHub renders inert, fenced by more backticks
//   than the text holds;
// - mermaid labels keep only letters, digits and a few signs (`chartLabel`);
// - report.html takes `plain` text into its data and the DOM's textContent only (src/html.ts).
// Renderers never put outside text on a raw HTML line (`<details><summary>…`), where markdown
// escapes do not apply.

/** Caps, in characters, by what the text is. */
export const LIMITS = {
  /** A region's column heading: tables stay readable. */
  column: 40,
  /** A name: region, scenario, phase, task file, error, metric, check. */
  name: 80,
  /** A row label or a name with a few words around it. */
  label: 120,
  /** Why a file was left out, or what a figure means. */
  reason: 160,
  title: 160,
  /** A server's words. */
  quote: 200,
  /** A note, a verdict's reasoning, or any text given no smaller cap. */
  note: 300,
} as const;

/** At most `max` characters, "…" marking a cut; never splits a surrogate pair. */
export function truncate(text: string, max: number): string {
  if (text.length <= max) return text;
  let end = max - 1;
  if (end > 0 && /[\uD800-\uDBFF]/.test(text[end - 1])) end--;
  return `${text.slice(0, end)}…`;
}

// C0 and C1 controls (line breaks, ESC of terminal sequences), line and paragraph separators, and
// the bidirectional overrides and isolates that reorder what is displayed.
const UNPRINTABLE = /[\u0000-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069\u200e\u200f]+/g;

/** One line of printable text, whitespace collapsed, at most `max` characters. */
export function plain(text: string, max: number = LIMITS.note): string {
  return truncate(String(text).replace(UNPRINTABLE, " ").replace(/\s+/g, " ").trim(), max);
}

const WORD_JOINER = "\u2060";
/**
 * Characters markdown (CommonMark, GFM tables and strikethrough) or HTML give a meaning to. Not
 * `(` and `)`: they make a link or an image only after a `]`, which is always escaped, and a URL
 * in them is broken on its own; leaving them keeps "Latency (ms)" as written in the raw text.
 */
const MARKDOWN_SIGNS = /[\\`*_~[\]!#|<>&]/g;

/**
 * Outside text in markdown prose or a table cell: shown as written, never as markup or a link.
 * `|` is escaped too, so the same text is safe in a table cell.
 */
export function inline(text: string, max: number = LIMITS.note): string {
  return (
    plain(text, max)
      .replace(MARKDOWN_SIGNS, "\\$&")
      // GitHub links these on the rendered text, after escapes are gone: a joiner breaks the pattern.
      .replace(/[@#]/g, `$&${WORD_JOINER}`)
      .replace(/:(?=\/\/)/g, `\\:${WORD_JOINER}`)
      .replace(/(www)\./gi, `$1${WORD_JOINER}\\.`)
  );
}

/** A table cell: the same rule as prose (every `|` is escaped there too). */
export const cell = inline;

/**
 * Outside text quoted in a code span, which GitHub and marked render inert (no HTML, mention or
 * link inside). The fence is one backtick longer than the longest run in the text. `inCell`: the
 * span sits in a table row, where GFM splits cells on `|` before it sees code spans, and reads `\|`
 * inside one as `|`.
 */
export function code(text: string, max: number = LIMITS.quote, inCell = false): string {
  let shown = plain(text, max);
  if (shown === "") return "—";
  if (inCell) shown = shown.replace(/\|/g, "\\|");
  const longest = Math.max(0, ...(shown.match(/`+/g) ?? []).map((run) => run.length));
  const fence = "`".repeat(longest + 1);
  // A span that begins or ends with a backtick needs a space inside each fence; CommonMark strips one.
  const pad = /^`|`$/.test(shown) ? " " : "";
  return `${fence}${pad}${shown}${pad}${fence}`;
}

/** A mermaid label (inside "…"): letters, digits and a few signs; anything else becomes '. */
export function chartLabel(text: string): string {
  return plain(text, 40).replace(/[^\p{L}\p{N} .,:_/()+='-]/gu, "'");
}

/** A round axis top a little above the largest value: 1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6 or 8 × 10ⁿ. */
export function niceCeiling(max: number): number {
  if (max <= 0) return 1;
  const target = max * 1.1;
  const magnitude = 10 ** Math.floor(Math.log10(target));
  const step = [1, 1.2, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10].find((m) => m * magnitude >= target)!;
  return Number((step * magnitude).toPrecision(12));
}

/** Elapsed time as m:ss (h:mm:ss past an hour). */
export function clock(ms: number): string {
  // Before the load's start (the server's idle scrapes): a minus sign, never a wrapped clock.
  if (Math.round(ms / 1000) < 0) return `-${clock(-ms)}`;
  const s = Math.round(ms / 1000);
  const h = Math.floor(s / 3600);
  const m = Math.floor((s % 3600) / 60);
  const ss = String(s % 60).padStart(2, "0");
  return h > 0 ? `${h}:${String(m).padStart(2, "0")}:${ss}` : `${m}:${ss}`;
}
