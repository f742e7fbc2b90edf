import { readFileSync } from "node:fs";

/**
 * How many TCP connections a loopback server on `port` holds established right now, from the
 * kernel's table (/proc/net/tcp and tcp6, Linux): any server, no metrics endpoint needed.
 */
export function establishedConnections(port: number): number {
  return establishedPeers(port).length;
}

/**
 * The peers (remote "address:port", hex as the kernel writes them) of the connections a loopback
 * server on `port` holds established right now: a client's socket is told apart by its ephemeral port.
 */
export function establishedPeers(port: number): string[] {
  const hexPort = port.toString(16).toUpperCase().padStart(4, "0");
  const peers: string[] = [];
  for (const table of ["/proc/net/tcp", "/proc/net/tcp6"]) {
    let text: string;
    try {
      text = readFileSync(table, "utf8");
    } catch {
      continue;
    }
    for (const line of text.split("\n").slice(1)) {
      const fields = line.trim().split(/\s+/);
      // sl local_address rem_address st …; state 01 is ESTABLISHED.
      if (fields.length > 3 && fields[3] === "01" && fields[1].endsWith(`:${hexPort}`)) peers.push(fields[2]);
    }
  }
  return peers;
}

/**
 * Resolves once the server on `port` holds at least `count` connections and that number has not
 * changed for `steadyMs` (their subscriptions are in by then, on loopback); rejects after `timeoutMs`.
 */
export async function waitForConnections(port: number, count: number, options: { steadyMs?: number; timeoutMs?: number } = {}): Promise<number> {
  const { steadyMs = 1_000, timeoutMs = 60_000 } = options;
  const deadline = Date.now() + timeoutMs;
  let [seen, since] = [-1, Date.now()];
  while (Date.now() < deadline) {
    const now = establishedConnections(port);
    if (now !== seen) [seen, since] = [now, Date.now()];
    else if (now >= count && Date.now() - since >= steadyMs) return now;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`the server on ${port} held ${seen} connections, not ${count}, within ${timeoutMs} ms`);
}
