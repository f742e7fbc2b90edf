import { z } from "zod";
import { runCaptures, type CaptureSpec } from "../capture.js";
import { nowMs } from "../clock.js";
import type { CableConfig } from "../config.js";
import { httpStatusError } from "../error-names.js";
import { CableError } from "../errors.js";
import { METRICS } from "../metrics.js";
import { httpRequest, type HttpAnswer } from "../sidecall.js";
import { hasHeader, withoutHeaders } from "../session.js";
import { asyncStep, type StepFn } from "../vu.js";
import { setTimeout as sleep } from "node:timers/promises";
import { sampleWords } from "../server-words.js";
import { trace, traceableUrl, tracing } from "../trace.js";
import { secondsToMs, templater, type Compiler } from "./compiler.js";
import { defineStep, isTemplated, seconds, stringMap, type CheckContext } from "./define.js";

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
    /** Names the step's own latency, `cable.http_latency.<name>`, as Artillery's metrics-by-endpoint names a request. */
    name: z.string().regex(/^[A-Za-z0-9_-]{1,64}$/, "letters, digits, _ and -, at most 64 (it names the metric cable.http_latency.<name>)").optional(),
    headers: stringMap.optional(),
    qs: stringMap.optional(),
    json: z.unknown().optional(),
    form: stringMap.optional(),
    body: z.string().optional(),
    followRedirect: z.boolean().default(true),
    /** Seconds for the whole step, every redirect and retry included; default `config.cable.timeout`. */
    timeout: seconds.optional(),
    /** Attempts again after a 429 or 503, each after the answer's Retry-After, within the step's timeout. */
    retry: z.number().int().min(0).max(10).default(0),
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
  if (u.protocol !== "http:" && u.protocol !== "https:") throw new CableError("invalid_value", `the HTTP step's url is ${u.protocol}, not http: or https:`);
  for (const [k, v] of Object.entries(qs ?? {})) u.searchParams.set(k, String(v));
  return u.toString();
}

function requestBody(spec: RequestSpec): { body?: string; contentType?: string } {
  if (spec.json !== undefined) return { body: JSON.stringify(spec.json), contentType: "application/json" };
  if (spec.form !== undefined) return { body: new URLSearchParams(Object.entries(spec.form).map(([k, v]): [string, string] => [k, String(v)])).toString(), contentType: "application/x-www-form-urlencoded" };
  if (spec.body !== undefined) return { body: spec.body };
  return {};
}

interface Hop {
  url: string;
  method: Method;
  keepBody: boolean;
}

/**
 * The next request of a redirect, as browsers do it (the Fetch standard's HTTP-redirect fetch):
 * only to http(s); 303, and 301/302 after anything but GET/HEAD, become a GET without a body.
 */
export function redirectTo(status: number, location: string | undefined, from: string, method: Method): Hop | undefined {
  if (![301, 302, 303, 307, 308].includes(status) || !location) return undefined;
  let url: URL;
  try {
    url = new URL(location, from);
  } catch {
    throw new CableError("http_redirect_refused", `${pathOf(from)} redirected to a Location that is not a URL`);
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") throw new CableError("http_redirect_refused", `${pathOf(from)} redirected to a ${url.protocol} URL: only http and https are followed`);
  const toGet = status === 303 || ((status === 301 || status === 302) && method !== "GET");
  return toGet ? { url: url.toString(), method: "GET", keepBody: false } : { url: url.toString(), method, keepBody: true };
}

/**
 * The scenario's credentials stay with the origin it sent them to: a redirect to another origin
 * drops them, as the Fetch standard (and Artillery's own HTTP engine, through got) does. The jar's
 * cookies still go where their own domain rules send them.
 */
const CREDENTIALS = new Set(["authorization", "cookie", "proxy-authorization"]);
/** A redirect that turns the request into a GET without a body drops what described the body. */
const BODY_HEADERS = new Set(["content-type", "content-length"]);
export const withoutCredentials = (headers: Record<string, string>) => withoutHeaders(headers, CREDENTIALS);

export const accepts = (expect: RequestSpec["expect"], status: number) =>
  expect === undefined ? status >= 200 && status < 400 : ([] as number[]).concat(expect).includes(status);

/** 429 Too Many Requests and 503 Service Unavailable say "later", and how much later in Retry-After. */
const RETRIED = new Set([429, 503]);

/** Retry-After in ms (seconds, or an HTTP date); without one, 1 s, 2 s, 4 s… by attempt. */
export function retryAfterMs(value: string | undefined, attempt: number, now = Date.now()): number {
  const seconds = value === undefined ? NaN : Number(value.trim());
  if (Number.isFinite(seconds) && seconds >= 0) return seconds * 1000;
  const date = value === undefined ? NaN : Date.parse(value);
  if (Number.isFinite(date)) return Math.max(0, date - now);
  return 1000 * 2 ** attempt;
}

function compileRequest(compiler: Compiler, method: Method, raw: RequestSpec): StepFn {
  const spec = templater(raw);
  const { events, settings } = compiler;
  const base = httpBase(settings, compiler.target);
  const captures: CaptureSpec[] = raw.capture === undefined ? [] : ([] as CaptureSpec[]).concat(raw.capture);
  const capturesFor = templater(captures);
  return asyncStep(async (vu, context) => {
    const s = spec(context);
    const timeoutMs = s.timeout === undefined ? settings.timeout * 1000 : secondsToMs(s.timeout, "timeout");
    const { body, contentType } = requestBody(s);
    let headers: Record<string, string> = {};
    for (const [k, v] of Object.entries(s.headers ?? {})) headers[k] = String(v);
    if (contentType && !hasHeader(headers, "content-type")) headers["Content-Type"] = contentType;
    let hop: Hop = { url: requestUrl(s.url, base, s.qs), method, keepBody: true };
    const first = hop.url;
    const session = vu.cookies(events);
    const localAddress = compiler.localAddress(vu);
    const startedAt = nowMs();
    // One deadline for the step: every hop and every wait for a retry come out of it.
    const deadline = AbortSignal.timeout(timeoutMs);
    let answer: HttpAnswer;
    for (let redirects = 0, retries = 0; ; ) {
      const hopHeaders = hop.keepBody ? headers : withoutHeaders(headers, BODY_HEADERS);
      answer = await httpRequest("http", hop.url, { method: hop.method, headers: hopHeaders, body: hop.keepBody ? body : undefined, timeoutMs, signal: deadline, tls: compiler.tls, localAddress, session });
      events.emit("counter", `${METRICS.httpCodes}.${answer.status}`, 1);
      const location = s.followRedirect ? headerValue(answer, "location") : undefined;
      if (tracing()) trace("http %s %s: HTTP %d%s", hop.method, traceableUrl(hop.url), answer.status, location ? ` → ${traceLocation(location, hop.url)}` : "");
      if (RETRIED.has(answer.status) && retries < s.retry) {
        const waitMs = retryAfterMs(headerValue(answer, "retry-after"), retries);
        if (nowMs() - startedAt + waitMs < timeoutMs) {
          retries++;
          events.emit("counter", METRICS.httpRetries, 1);
          await sleep(waitMs);
          continue;
        }
      }
      const next = location ? redirectTo(answer.status, location, hop.url, hop.method) : undefined;
      if (!next) break;
      if (++redirects > MAX_REDIRECTS) throw new CableError("http_too_many_redirects", `more than ${MAX_REDIRECTS} redirects`);
      if (new URL(next.url).origin !== new URL(hop.url).origin) headers = withoutCredentials(headers);
      hop = next;
    }
    const latency = nowMs() - startedAt;
    events.emit("histogram", METRICS.httpLatency, latency);
    if (raw.name) events.emit("histogram", `${METRICS.httpLatency}.${raw.name}`, latency);
    // The URL is the scenario's; the answer's body is the app's and may hold anything: not in the message.
    if (!accepts(s.expect, answer.status)) throw new CableError(httpStatusError(answer.status), `${method} ${pathOf(hop.url)} answered HTTP ${answer.status}`);
    if (!captures.length) return;
    const { values, missing } = runCaptures(capturesFor(context), answer);
    Object.assign(context.vars, values);
    if (missing.length) {
      const type = headerValue(answer, "content-type")?.split(";")[0];
      // Where the answer came from: a wrong password often shows as a redirect back to the form.
      const where = hop.url === first && hop.method === method ? `${method} ${pathOf(first)}` : `${method} ${pathOf(first)} → ${hop.method} ${pathOf(hop.url)}`;
      const failure = new CableError("capture_failed", `${where}: nothing to capture as ${missing.join(", ")} (HTTP ${answer.status}, ${Buffer.byteLength(answer.body)} bytes${type ? ` of ${type}` : ""})`);
      // The step's own words, once per distinct text, to the console and report.md's notes on errors.
      sampleWords(failure.code, "capture", failure.message);
      throw failure;
    }
  });
}

const pathOf = (url: string) => new URL(url).pathname;

/** A Location as a trace line shows it: resolved against the hop, its query values masked (trace.ts). */
function traceLocation(location: string, from: string): string {
  try {
    return traceableUrl(new URL(location, from).toString());
  } catch {
    return "(not a URL)";
  }
}

function headerValue(answer: HttpAnswer, name: string): string | undefined {
  const value = answer.headers[name];
  return Array.isArray(value) ? value[0] : value;
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
