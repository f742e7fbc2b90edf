/**
 * Where a run's secrets could come back out of a task: a server quoting the Cookie header in its
 * refusal (the engine samples the server's words for the report), an error message, a processor's
 * log line. Every text a task writes or uploads (Artillery's log and its echo on the task's output,
 * report.json and the cable-report sidecar, the live files, status.json) passes through one
 * redactor made from the values of the run's secrets, which the task alone holds on Fargate.
 */
import { readFile, writeFile } from "node:fs/promises";

const REDACTED = "***";

/**
 * Names, comma-separated, of variables of this process's environment that hold secrets: set by the
 * local backend for its workers (`--local --secret NAME` passes $NAME itself), and by the worker
 * for Artillery, whose plugins redact the live files with it.
 */
export const SECRET_ENV = "CABLE_SECRET_ENV";

export type Redact = (text: string) => string;

/**
 * The forms a value takes in a task's texts: as it is, inside a JSON string (a log line quoting
 * the server as JSON), URL-encoded (a query string), and as the engine cleans a server's words
 * before it keeps them (control characters and runs of white space become one space).
 */
function secretForms(value: string): string[] {
  const forms = [value, JSON.stringify(value).slice(1, -1), encodeURIComponent(value), value.replace(/[\u0000-\u001f\u007f-\u009f\s]+/g, " ")];
  return [...new Set(forms)].filter((form) => form.length > 0);
}

/** The shortest end of a cut text taken for the first part of a secret. */
const MIN_PARTIAL = 4;

/** Replaces every form of every value in a text; longest first, so that no part of a longer secret is left. */
export function makeRedactor(values: string[]): Redact {
  const needles = [...new Set(values.flatMap(secretForms))].sort((a, b) => b.length - a.length);
  if (needles.length === 0) return (text) => text;
  return (text) => redactCutEnd(needles.reduce((acc, needle) => acc.split(needle).join(REDACTED), text), needles);
}

/**
 * The server's words are cut to a length, ending in "…" (the engine's 160 characters, the sidecar's
 * 200): the cut may fall inside a secret, whose first part then ends the text.
 */
function redactCutEnd(text: string, needles: string[]): string {
  if (!text.endsWith("…")) return text;
  const body = text.slice(0, -1);
  for (const needle of needles) {
    for (let k = Math.min(needle.length - 1, body.length); k >= MIN_PARTIAL; k--) {
      if (body.endsWith(needle.slice(0, k))) return `${body.slice(0, -k)}${REDACTED}…`;
    }
  }
  return text;
}

/** Every string of a JSON value, keys included, redacted; numbers and structure untouched. */
export function redactJson<T>(value: T, redact: Redact): T {
  const walk = (v: unknown): unknown => {
    if (typeof v === "string") return redact(v);
    if (Array.isArray(v)) return v.map(walk);
    if (typeof v === "object" && v !== null) return Object.fromEntries(Object.entries(v).map(([k, x]) => [redact(k), walk(x)]));
    return v;
  };
  return walk(value) as T;
}

/**
 * A file of the task's results, redacted in place before it is uploaded. JSON stays valid JSON
 * (its strings are redacted, not its numbers); a file that is not JSON, or too deep to walk, is
 * redacted as text. A file without any secret is left byte for byte.
 */
export async function redactFile(file: string, redact: Redact): Promise<void> {
  const text = await readFile(file, "utf8");
  if (redact(text) === text) return;
  let redacted: string;
  try {
    redacted = JSON.stringify(redactJson(JSON.parse(text) as unknown, redact));
  } catch {
    redacted = redact(text);
  }
  await writeFile(file, redacted);
}

/** The values of the variables SECRET_ENV names in `env`; a named variable that is unset is an error naming it. */
export function envSecretValues(names: string[], env: NodeJS.ProcessEnv): Record<string, string> {
  const values: Record<string, string> = {};
  for (const name of names) {
    const value = env[name];
    if (value === undefined) throw new Error(`secret ${name} (${SECRET_ENV}) is not set in the worker's environment`);
    values[name] = value;
  }
  return values;
}

/** Artillery's side (the worker's plugins): a redactor of the secrets the worker named in its environment. */
export function redactorFromEnv(env: NodeJS.ProcessEnv): Redact {
  const names = (env[SECRET_ENV] ?? "").split(",").filter(Boolean);
  return makeRedactor(names.flatMap((name) => env[name] ?? []));
}
