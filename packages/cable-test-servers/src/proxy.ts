import net from "node:net";

export interface TcpProxy {
  /** The proxy's port on 127.0.0.1: connect here instead of the server's. */
  port: number;
  /** A network failure: every proxied connection is reset and the port refuses new ones. */
  kill(): Promise<void>;
  /** The network is back: the proxy listens again on the same port. */
  restart(): Promise<void>;
  stop(): Promise<void>;
}

/**
 * A loopback TCP proxy in front of a server, to drop every client at once while the server keeps
 * running and keeps its state (sessions, history): a load balancer's restart or a network cut, as
 * opposed to a crash of the server itself.
 */
export async function startTcpProxy(targetPort: number, port = 0): Promise<TcpProxy> {
  const sockets = new Set<net.Socket>();
  let server: net.Server | undefined;
  const listen = (p: number) =>
    new Promise<number>((resolve, reject) => {
      const s = net.createServer((client) => {
        const upstream = net.connect({ host: "127.0.0.1", port: targetPort });
        for (const sock of [client, upstream]) {
          sockets.add(sock);
          sock.on("close", () => sockets.delete(sock));
          sock.on("error", () => {
            client.destroy();
            upstream.destroy();
          });
        }
        client.pipe(upstream);
        upstream.pipe(client);
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
    stop: close,
  };
}
