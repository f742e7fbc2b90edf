import net from "node:net";

export interface TcpProxy {
  /** The proxy's port on 127.0.0.1: connect here instead of the server's. */
  port: number;
  /** A network failure: every proxied connection is reset and the port refuses new ones. */
  kill(): Promise<void>;
  /** The network is back: the proxy listens again on the same port. */
  restart(): Promise<void>;
  /**
   * A silent partition (a dropped route, a dead NAT entry, a load balancer failing over): nothing
   * passes either way and nothing is closed; new connections are taken and hang, as SYNs into a
   * black hole would.
   */
  silence(): void;
  /**
   * The partition ends. The connections that lived through it are `reset` (as a NAT or a balancer
   * that lost them answers the next packet), `forgotten` (silent for good, still open), or
   * `resumed` (the route is back: what was queued flows); new connections pass again.
   */
  heal(survivors: "reset" | "forget" | "resume"): void;
  stop(): Promise<void>;
}

/**
 * A loopback TCP proxy in front of a server, to drop every client at once while the server keeps
 * running and keeps its state (sessions, history): a load balancer's restart or a network cut, as
 * opposed to a crash of the server itself.
 */
export async function startTcpProxy(targetPort: number, port = 0): Promise<TcpProxy> {
  const sockets = new Set<net.Socket>();
  let pairs: Array<[net.Socket, net.Socket]> = [];
  let silent = false;
  let server: net.Server | undefined;
  const connect = (client: net.Socket, upstream: net.Socket) => {
    client.pipe(upstream);
    upstream.pipe(client);
  };
  const listen = (p: number) =>
    new Promise<number>((resolve, reject) => {
      const s = net.createServer((client) => {
        const upstream = net.connect({ host: "127.0.0.1", port: targetPort });
        const pair: [net.Socket, net.Socket] = [client, upstream];
        pairs.push(pair);
        for (const sock of pair) {
          sockets.add(sock);
          sock.on("close", () => {
            sockets.delete(sock);
            pairs = pairs.filter((p) => p !== pair);
          });
          sock.on("error", () => {
            client.destroy();
            upstream.destroy();
          });
        }
        if (silent) {
          client.pause();
          upstream.pause();
        } else connect(client, upstream);
      });
      s.once("error", reject);
      s.listen(p, "127.0.0.1", () => resolve((s.address() as net.AddressInfo).port));
      server = s;
    });
  const close = async () => {
    const s = server;
    server = undefined;
    for (const sock of sockets) sock.resetAndDestroy();
    sockets.clear();
    pairs = [];
    if (s) await new Promise<void>((resolve) => s.close(() => resolve()));
  };
  const bound = await listen(port);
  return {
    port: bound,
    kill: close,
    restart: async () => {
      if (server) throw new Error("the proxy is still listening: kill it first");
      await listen(bound);
    },
    silence() {
      silent = true;
      for (const [client, upstream] of pairs) {
        client.unpipe(upstream);
        upstream.unpipe(client);
        client.pause();
        upstream.pause();
      }
    },
    heal(survivors) {
      silent = false;
      const lived = pairs;
      if (survivors === "reset") for (const [client, upstream] of lived) (client.resetAndDestroy(), upstream.resetAndDestroy());
      else if (survivors === "resume") for (const [client, upstream] of lived) (connect(client, upstream), client.resume(), upstream.resume());
      // "forget": they stay paused and unpiped, silent for good; only new connections pass.
      else pairs = [];
    },
    stop: close,
  };
}
