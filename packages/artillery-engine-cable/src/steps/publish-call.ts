import { nowMs } from "../clock.js";
import { CableError } from "../errors.js";
import { METRICS } from "../metrics.js";
import { httpRequest } from "../sidecall.js";
import type { VirtualUser } from "../vu.js";
import type { Compiler } from "./compiler.js";

/**
 * A server-side publish over HTTP (Pusher's events API, AnyCable's broadcast endpoint): records
 * `cable.publish_latency`; a non-2xx answer is `cable.publish_failed`, and so is a 2xx answer whose
 * body is an error (`answerError`), a socket error keeps its code.
 */
export async function postJson(compiler: Compiler, url: string, body: unknown, headers: Record<string, string>, vu: VirtualUser): Promise<void> {
  const startedAt = nowMs();
  const answer = await httpRequest("publish", url, {
    headers: { "Content-Type": "application/json", ...headers },
    body: typeof body === "string" ? body : JSON.stringify(body),
    timeoutMs: compiler.settings.timeout * 1000,
    tls: compiler.tls,
    // A signed-in user's cookies go wherever the jar's domain and path rules send them, as with every call of the user.
    session: vu.session,
    localAddress: compiler.localAddress(vu),
  });
  compiler.events.emit("histogram", METRICS.publishLatency, nowMs() - startedAt);
  if (answer.status < 200 || answer.status >= 300) throw new CableError("publish_failed", `the HTTP endpoint answered ${answer.status}`);
  const refused = answerError(answer.body);
  if (refused) throw new CableError("publish_failed", `the HTTP endpoint answered ${answer.status} with an error${refused.code ? ` (code ${refused.code})` : ""}`);
}

/**
 * The error a 2xx answer carries in its body, if any. Soketi 1.6 answers a publish it refuses (a
 * wrong signature: "The secret authentication failed") with HTTP 200 and
 * `{"error": "…", "code": 401}`; Pusher, Sockudo, Reverb and anycable-go answer 4xx.
 */
export function answerError(body: string): { code: number | undefined } | undefined {
  // Cheap for the usual `{}`: parsed only when it could be an error object.
  if (!body.includes('"error"')) return undefined;
  let value: unknown;
  try {
    value = JSON.parse(body);
  } catch {
    return undefined;
  }
  if (value === null || typeof value !== "object" || Array.isArray(value)) return undefined;
  const { error, code } = value as { error?: unknown; code?: unknown };
  if (error === undefined || error === null || error === false || error === "") return undefined;
  return { code: typeof code === "number" && Number.isFinite(code) ? code : undefined };
}
