import { debuglog } from "node:util";

/**
 * `NODE_DEBUG=cable npx artillery run …` prints every frame in and out and every connection state
 * change, for users debugging a scenario. Off, it costs one boolean check per frame.
 */
const log = debuglog("cable");

export const tracing = (): boolean => log.enabled;

export function trace(format: string, ...args: unknown[]): void {
  log(format, ...args);
}
