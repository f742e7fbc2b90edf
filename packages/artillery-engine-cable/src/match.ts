// Matching and capturing on message payloads: pure functions, no sockets.

const REGEXP_LITERAL = /^\/(.+)\/([dgimsuy]*)$/s;

/** A compiled `match:` pattern: a string written `/.../flags` becomes a RegExp, once. */
export type Pattern = RegExp | string | number | boolean | null | Pattern[] | { [key: string]: Pattern };

export function compilePattern(spec: unknown): Pattern {
  if (typeof spec === "string") {
    const m = REGEXP_LITERAL.exec(spec);
    return m ? new RegExp(m[1], m[2]) : spec;
  }
  if (Array.isArray(spec)) return spec.map(compilePattern);
  if (spec !== null && typeof spec === "object") {
    const out: Record<string, Pattern> = {};
    for (const [k, v] of Object.entries(spec)) out[k] = compilePattern(v);
    return out;
  }
  return spec as Pattern;
}

/**
 * A partial deep match: every key of an object pattern must match the same key of the value (extra
 * keys in the value are fine); arrays match element by element; a RegExp tests the value as text.
 * A string pattern equals a number or boolean with the same text, because templated values
 * (`"{{ userId }}"`) are strings while servers send numbers.
 */
export function matches(value: unknown, pattern: Pattern): boolean {
  if (pattern instanceof RegExp) {
    pattern.lastIndex = 0;
    return value !== undefined && value !== null && pattern.test(typeof value === "string" ? value : JSON.stringify(value));
  }
  if (Array.isArray(pattern)) {
    if (!Array.isArray(value) || value.length < pattern.length) return false;
    return pattern.every((p, i) => matches(value[i], p));
  }
  if (pattern !== null && typeof pattern === "object") {
    if (value === null || typeof value !== "object") return false;
    for (const key in pattern) {
      if (!matches((value as Record<string, unknown>)[key], pattern[key])) return false;
    }
    return true;
  }
  if (typeof pattern === "string" && (typeof value === "number" || typeof value === "boolean")) {
    return String(value) === pattern;
  }
  return value === pattern;
}

/**
 * Parses the JSONPath subset that captures use: `$`, `.key`, `['key']` and `[index]`
 * (`$.message.author_id`, `$.items[0]`). Filters and wildcards are not supported: a capture names
 * one value.
 */
export function parsePath(path: string): (string | number)[] {
  if (!path.startsWith("$")) throw new Error(`a capture path starts with "$": ${path}`);
  const segments: (string | number)[] = [];
  const re = /\.([A-Za-z_$][\w$-]*)|\[(\d+)\]|\[['"]([^'"]*)['"]\]/y;
  let at = 1;
  while (at < path.length) {
    re.lastIndex = at;
    const m = re.exec(path);
    if (!m) throw new Error(`cannot read the capture path ${path} at "${path.slice(at)}"`);
    segments.push(m[1] ?? (m[2] !== undefined ? Number(m[2]) : m[3]));
    at = re.lastIndex;
  }
  return segments;
}

export function readPath(value: unknown, segments: (string | number)[]): unknown {
  let cur = value;
  for (const s of segments) {
    if (cur === null || typeof cur !== "object") return undefined;
    cur = (cur as Record<string | number, unknown>)[s];
  }
  return cur;
}
