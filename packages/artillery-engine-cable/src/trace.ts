import { debuglog } from "node:util";

/**
 * `NODE_DEBUG=cable npx artillery run …` prints every frame in and out and every connection state
 * change, for users debugging a scenario. Off, it costs one boolean check per frame.
 */
const log = debuglog("cable");
// NODE_DEBUG is read once at start-up; debuglog's `enabled` getter showed in the connect profile
// (~1 % of a VU's connect), as it is asked on every frame and state change.
const enabled = log.enabled;

export const tracing = (): boolean => enabled;

export function trace(format: string, ...args: unknown[]): void {
  log(format, ...args);
}
