// Small text helpers shared by the markdown sections: escaping for GitHub, and axis numbers.

export function truncate(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max - 1)}…`;
}

/** Text inside a table cell: no row breaks, no column breaks, no raw HTML. */
export function cell(text: string): string {
  return inline(text).replace(/\|/g, "\\|");
}

export function inline(text: string): string {
  return text.replace(/[\r\n]+/g, " ").replace(/</g, "&lt;").replace(/>/g, "&gt;");
}

export function chartLabel(text: string): string {
  return truncate(text.replace(/["\r\n]/g, "'"), 40);
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
  const s = Math.max(0, Math.round(ms / 1000));
  const h = Math.floor(s / 3600);
  const m = Math.floor((s % 3600) / 60);
  const ss = String(s % 60).padStart(2, "0");
  return h > 0 ? `${h}:${String(m).padStart(2, "0")}:${ss}` : `${m}:${ss}`;
}

/** Text inside a `code span`: GitHub shows it as written (no HTML inside), so only line breaks and backticks go. */
export function code(text: string): string {
  return `\`${text.replace(/[\r\n]+/g, " ").replace(/`/g, "'")}\``;
}
