import { nowMs } from "../clock.js";
import { CableError } from "../errors.js";
import { METRICS } from "../metrics.js";
import { httpRequest } from "../sidecall.js";
import type { Compiler } from "./compiler.js";

/**
 * A server-side publish over HTTP (Pusher's events API, AnyCable's broadcast endpoint): records
 * `cable.publish_latency`; a non-2xx answer is `cable.publish_failed`, a socket error keeps its code.
 */
export async function postJson(compiler: Compiler, url: string, body: unknown, headers: Record<string, string> = {}): Promise<void> {
  const startedAt = nowMs();
  const answer = await httpRequest("publish", url, {
    headers: { "Content-Type": "application/json", ...headers },
    body: typeof body === "string" ? body : JSON.stringify(body),
    timeoutMs: compiler.settings.timeout * 1000,
    tls: compiler.tls,
  });
  compiler.events.emit("histogram", METRICS.publishLatency, nowMs() - startedAt);
  if (answer.status < 200 || answer.status >= 300) throw new CableError("publish_failed", `the HTTP endpoint answered ${answer.status}`);
}
