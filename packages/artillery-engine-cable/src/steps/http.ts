import { nowMs } from "../clock.js";
import { CableError } from "../errors.js";
import { METRICS } from "../metrics.js";
import type { Compiler } from "./compiler.js";

/**
 * A server-side publish over HTTP (Pusher's events API, AnyCable's broadcast endpoint): records
 * `cable.publish_latency`; a non-2xx answer is `cable.publish_failed`, a socket error keeps its code.
 */
export async function postJson(compiler: Compiler, url: string, body: unknown, headers: Record<string, string> = {}): Promise<void> {
  const startedAt = nowMs();
  let status: number;
  try {
    const res = await fetch(url, {
      method: "POST",
      headers: { "Content-Type": "application/json", ...headers },
      body: typeof body === "string" ? body : JSON.stringify(body),
      signal: AbortSignal.timeout(compiler.settings.timeout * 1000),
    });
    status = res.status;
    await res.arrayBuffer();
  } catch (err) {
    // fetch hides the socket error in `cause`: keep its code (ECONNREFUSED, …) as other steps do.
    const cause = (err as { cause?: { code?: string } }).cause;
    if (cause?.code) throw Object.assign(new Error(`publish failed: ${cause.code}`), { code: cause.code });
    throw new CableError((err as Error).name === "TimeoutError" ? "publish_timeout" : "publish_failed", `publish failed: ${(err as Error).message}`);
  }
  compiler.events.emit("histogram", METRICS.publishLatency, nowMs() - startedAt);
  if (status < 200 || status >= 300) throw new CableError("publish_failed", `the HTTP endpoint answered ${status}`);
}
