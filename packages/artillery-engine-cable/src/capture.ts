import { JSONPath } from "jsonpath-plus";

// What an HTTP step captures from its answer, in Artillery's own syntax (its HTTP engine's
// `capture`): `json` with a JSONPath, `regexp` with `group` and `flags`, `header`; each `as` a
// variable. Pure functions: no sockets, no events.

export type CaptureSpec = ({ json: string } | { regexp: string; group?: number | string; flags?: string } | { header: string }) & {
  as: string;
  /** false: a capture that finds nothing leaves the variable unset instead of failing the user (Artillery's `strict`). */
  strict?: boolean;
};

export interface Answer {
  body: string;
  headers: Record<string, string | string[] | undefined>;
}

/** What a capture kind reads: the answer's body as JSON, as text, or a header. */
const kindOf = (spec: CaptureSpec) => ("json" in spec ? "json" : "regexp" in spec ? "regexp" : "header");

/** The first value JSONPath finds (Artillery picks one at random when there are several; a load test wants the same one each time). */
export function captureJson(doc: unknown, path: string): unknown {
  const found = JSONPath({ path, json: doc as object, wrap: true }) as unknown[];
  return found.length ? found[0] : undefined;
}

/** The whole match, or its `group` (a number, or a named group), as Artillery's `extractRegExp`. */
export function captureRegexp(text: string, pattern: string, group?: number | string, flags?: string): string | undefined {
  const match = new RegExp(pattern, flags).exec(text);
  if (!match) return undefined;
  if (group === undefined) return match[0];
  return typeof group === "number" ? match[group] : match.groups?.[group];
}

export function captureHeader(headers: Answer["headers"], name: string): string | undefined {
  const value = headers[name.toLowerCase()];
  return Array.isArray(value) ? value.join(", ") : value;
}

/**
 * Every capture's value, and the ones that found nothing though `strict` (the default). A body that
 * is not JSON finds nothing for a `json` capture: a sign-in page that answers HTML where the
 * scenario expected JSON is a missing capture, named, not a crash.
 */
export function runCaptures(specs: CaptureSpec[], answer: Answer): { values: Record<string, unknown>; missing: string[] } {
  const values: Record<string, unknown> = {};
  const missing: string[] = [];
  let doc: { parsed: unknown } | undefined;
  for (const spec of specs) {
    let value: unknown;
    switch (kindOf(spec)) {
      case "json": {
        doc ??= parseJson(answer.body);
        value = doc.parsed === undefined ? undefined : captureJson(doc.parsed, (spec as { json: string }).json);
        break;
      }
      case "regexp": {
        const s = spec as { regexp: string; group?: number | string; flags?: string };
        value = captureRegexp(answer.body, s.regexp, s.group, s.flags);
        break;
      }
      default:
        value = captureHeader(answer.headers, (spec as { header: string }).header);
    }
    if (value === undefined || value === null) {
      if (spec.strict !== false) missing.push(spec.as);
      continue;
    }
    values[spec.as] = value;
  }
  return { values, missing };
}

function parseJson(body: string): { parsed: unknown } {
  try {
    return { parsed: JSON.parse(body) };
  } catch {
    return { parsed: undefined };
  }
}
