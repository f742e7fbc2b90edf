import { z } from "zod";
import { runCaptures, type CaptureSpec } from "../capture.js";
import { nowMs } from "../clock.js";
import type { CableConfig } from "../config.js";
import { httpStatusError } from "../error-names.js";
import { CableError } from "../errors.js";
import { METRICS } from "../metrics.js";
import { httpRequest, type HttpAnswer } from "../sidecall.js";
import { hasHeader } from "../session.js";
import { asyncStep, type StepFn } from "../vu.js";
import { templater, type Compiler } from "./compiler.js";
import { defineStep, isTemplated, stringMap, type CheckContext } from "./define.js";

// The HTTP steps (`get`, `post`, `put`, `patch`, `delete`), written as Artillery's HTTP engine
// writes them, so that a virtual user signs in to the app it loads before it opens its socket:
// every answer's cookies go into the user's jar (session.ts), and from there with the socket's
// upgrade and every auth call.

/** Browsers and Artillery (got) give up after 10 redirects. */
const MAX_REDIRECTS = 10;

const validRegexp = (value: { regexp: string; flags?: string }, ctx: z.RefinementCtx) => {
  if (isTemplated(value.regexp)) return;
  try {
    new RegExp(value.regexp, value.flags);
  } catch (err) {
    ctx.addIssue({ code: z.ZodIssueCode.custom, path: ["regexp"], message: (err as Error).message });
  }
};

const captureSchema = z.union([
  z.object({ json: z.string().regex(/^\$/, 'a JSONPath starts with "$"'), as: z.string().min(1), strict: z.boolean().optional() }).strict(),
  z
    .object({ regexp: z.string().min(1), group: z.union([z.number().int().nonnegative(), z.string().min(1)]).optional(), flags: z.string().regex(/^[dimsuy]*$/, "flags are among d, i, m, s, u, y").optional(), as: z.string().min(1), strict: z.boolean().optional() })
    .strict()
    .superRefine(validRegexp),
  z.object({ header: z.string().min(1), as: z.string().min(1), strict: z.boolean().optional() }).strict(),
]);

const statusCode = z.number().int().min(100).max(599);

const requestSchema = z
  .object({
    /** Absolute, or relative to `config.cable.http` (default: the target's origin with http/https). */
    url: z.string().min(1),
    headers: stringMap.optional(),
    qs: stringMap.optional(),
    json: z.unknown().optional(),
    form: stringMap.optional(),
    body: z.string().optional(),
    followRedirect: z.boolean().default(true),
    capture: z.union([captureSchema, z.array(captureSchema).nonempty()]).optional(),
    /** The statuses that let the user go on; default: any 2xx or 3xx. */
    expect: z.union([statusCode, z.array(statusCode).nonempty()]).optional(),
  })
  .strict()
  .refine((s) => [s.json, s.form, s.body].filter((b) => b !== undefined).length <= 1, { message: 'give one body: "json", "form" or "body"' });

export type RequestSpec = z.output<typeof requestSchema>;
type Method = "GET" | "POST" | "PUT" | "PATCH" | "DELETE";

/** Where relative URLs of HTTP steps point: `config.cable.http`, else the target's origin with http(s) for ws(s). */
export function httpBase(settings: CableConfig, target: string | undefined): string | undefined {
  const base = settings.http ?? target;
  if (!base || isTemplated(base)) return undefined;
  const u = new URL(base);
  if (settings.http) return u.toString();
  const protocol = u.protocol === "wss:" ? "https:" : u.protocol === "ws:" ? "http:" : u.protocol;
  return `${protocol}//${u.host}/`;
}

export function requestUrl(url: string, base: string | undefined, qs: RequestSpec["qs"]): string {
  let u: URL;
  try {
    u = new URL(url, base);
  } catch {
    throw new CableError("invalid_value", `the HTTP step's url is not a URL${base ? "" : " (and there is no config.target or config.cable.http to resolve it against)"}`);
  }
  for (const [k, v] of Object.entries(qs ?? {})) u.searchParams.set(k, String(v));
  return u.toString();
}

function requestBody(spec: RequestSpec): { body?: string; contentType?: string } {
  if (spec.json !== undefined) return { body: JSON.stringify(spec.json), contentType: "application/json" };
  if (spec.form !== undefined) return { body: new URLSearchParams(Object.entries(spec.form).map(([k, v]): [string, string] => [k, String(v)])).toString(), contentType: "application/x-www-form-urlencoded" };
  if (spec.body !== undefined) return { body: spec.body };
  return {};
}

/** The next request of a redirect, as browsers do it: 303, and 301/302 after anything but GET/HEAD, become a GET without a body. */
export function redirectTo(status: number, location: string | undefined, from: string, method: Method): { url: string; method: Method; keepBody: boolean } | undefined {
  if (![301, 302, 303, 307, 308].includes(status) || !location) return undefined;
  const url = new URL(location, from).toString();
  const toGet = status === 303 || ((status === 301 || status === 302) && method !== "GET");
  return toGet ? { url, method: "GET", keepBody: false } : { url, method, keepBody: true };
}

export const accepts = (expect: RequestSpec["expect"], status: number) =>
  expect === undefined ? status >= 200 && status < 400 : ([] as number[]).concat(expect).includes(status);

function compileRequest(compiler: Compiler, method: Method, raw: RequestSpec): StepFn {
  const spec = templater(compiler, raw);
  const { events, settings } = compiler;
  const base = httpBase(settings, compiler.target);
  const captures: CaptureSpec[] = raw.capture === undefined ? [] : ([] as CaptureSpec[]).concat(raw.capture);
  return asyncStep(async (vu, context) => {
    const s = spec(context);
    const { body, contentType } = requestBody(s);
    const headers: Record<string, string> = {};
    for (const [k, v] of Object.entries(s.headers ?? {})) headers[k] = String(v);
    if (contentType && !hasHeader(headers, "content-type")) headers["Content-Type"] = contentType;
    let hop = { url: requestUrl(s.url, base, s.qs), method, keepBody: true };
    const session = vu.cookies();
    const startedAt = nowMs();
    let answer: HttpAnswer;
    for (let redirects = 0; ; redirects++) {
      const hopHeaders = hop.keepBody ? headers : withoutBodyHeaders(headers);
      answer = await httpRequest("http", hop.url, { method: hop.method, headers: hopHeaders, body: hop.keepBody ? body : undefined, timeoutMs: settings.timeout * 1000, tls: compiler.tls, session });
      events.emit("counter", `${METRICS.httpCodes}.${answer.status}`, 1);
      const next = s.followRedirect ? redirectTo(answer.status, headerValue(answer, "location"), hop.url, hop.method) : undefined;
      if (!next) break;
      if (redirects === MAX_REDIRECTS) throw new CableError("http_too_many_redirects", `more than ${MAX_REDIRECTS} redirects`);
      hop = next;
    }
    events.emit("histogram", METRICS.httpLatency, nowMs() - startedAt);
    // The URL is the scenario's; the answer's body is the app's and may hold anything: not in the message.
    if (!accepts(s.expect, answer.status)) throw new CableError(httpStatusError(answer.status), `${method} ${pathOf(hop.url)} answered HTTP ${answer.status}`);
    if (!captures.length) return;
    const { values, missing } = runCaptures(captures.map((c) => (isTemplatedCapture(c) ? compiler.helpers.template(c, context) : c)), answer);
    Object.assign(context.vars, values);
    if (missing.length) throw new CableError("capture_failed", `${method} ${pathOf(hop.url)}: nothing to capture as ${missing.join(", ")} (HTTP ${answer.status})`);
  });
}

const isTemplatedCapture = (c: CaptureSpec) => JSON.stringify(c).includes("{{");
const pathOf = (url: string) => new URL(url).pathname;

function headerValue(answer: HttpAnswer, name: string): string | undefined {
  const value = answer.headers[name];
  return Array.isArray(value) ? value[0] : value;
}

function withoutBodyHeaders(headers: Record<string, string>): Record<string, string> {
  return Object.fromEntries(Object.entries(headers).filter(([k]) => !["content-type", "content-length"].includes(k.toLowerCase())));
}

function checkRequest(spec: RequestSpec, { at, config }: CheckContext, name: string, target: string | undefined): string[] {
  if (isTemplated(spec.url) || /^https?:\/\//i.test(spec.url)) return [];
  if (/^[a-z][a-z0-9+.-]*:/i.test(spec.url)) return [`${at} (${name}): field "url": an HTTP step's url is http(s) or a path, not ${spec.url.split(":")[0]}:`];
  if (!config.http && !target) return [`${at} (${name}): field "url": "${spec.url}" is relative, and there is no config.target or config.cable.http to resolve it against`];
  return [];
}

function requestStep(method: Method) {
  const name = method.toLowerCase();
  return defineStep({
    schema: requestSchema,
    check: (spec, ctx) => checkRequest(spec, ctx, name, ctx.target),
    compile: (compiler, spec) => compileRequest(compiler, method, spec),
  });
}

export const get = requestStep("GET");
export const post = requestStep("POST");
export const put = requestStep("PUT");
export const patch = requestStep("PATCH");
export const del = requestStep("DELETE");
