import { execFileSync } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import tls from "node:tls";

/** A throwaway certificate authority made at test time (openssl), as a staging server's internal CA. */
export interface TestCa {
  /** The CA certificate, PEM, and its file. */
  caPem: string;
  caFile: string;
  /** A server certificate signed by this CA for `hosts` (DNS names and IP addresses). */
  issue(hosts: string[]): { cert: string; key: string };
  /** Removes the CA's folder. */
  remove(): void;
}

export function makeTestCa(): TestCa {
  const dir = mkdtempSync(path.join(os.tmpdir(), "cable-test-ca-"));
  const openssl = (args: string[]) => execFileSync("openssl", args, { cwd: dir, stdio: ["ignore", "ignore", "pipe"] });
  const ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"];
  openssl(["req", "-x509", ...ec, "-keyout", "ca.key", "-out", "ca.pem", "-days", "2", "-subj", "/CN=cable-loadtest test CA", "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign"]);
  let serial = 0;
  return {
    caPem: readFileSync(path.join(dir, "ca.pem"), "utf8"),
    caFile: path.join(dir, "ca.pem"),
    issue(hosts) {
      const name = `leaf-${++serial}`;
      const san = hosts.map((h) => (net.isIP(h) ? `IP:${h}` : `DNS:${h}`)).join(",");
      writeFileSync(path.join(dir, `${name}.ext`), `subjectAltName=${san}\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n`);
      openssl(["req", ...ec, "-keyout", `${name}.key`, "-out", `${name}.csr`, "-subj", `/CN=${hosts[0]}`]);
      openssl(["x509", "-req", "-in", `${name}.csr`, "-CA", "ca.pem", "-CAkey", "ca.key", "-set_serial", String(serial + 1000), "-out", `${name}.pem`, "-days", "2", "-extfile", `${name}.ext`]);
      return { cert: readFileSync(path.join(dir, `${name}.pem`), "utf8"), key: readFileSync(path.join(dir, `${name}.key`), "utf8") };
    },
    remove: () => rmSync(dir, { recursive: true, force: true }),
  };
}

export interface TlsTerminator {
  port: number;
  /** The same URL on the terminator: ws:// → wss://, http:// → https://, the port replaced. */
  secure(url: string): string;
  close(): Promise<void>;
}

/**
 * A TLS terminator on loopback in front of a plain server, as a load balancer or nginx in front of
 * a cable server: TLS with `cert`/`key` on its own port, plain TCP to `targetPort` behind it.
 */
export async function startTlsTerminator(options: { targetPort: number; cert: string; key: string }): Promise<TlsTerminator> {
  const sockets = new Set<net.Socket>();
  const server = tls.createServer({ cert: options.cert, key: options.key }, (client) => {
    const upstream = net.connect(options.targetPort, "127.0.0.1");
    for (const s of [client, upstream]) {
      // As a terminator should: no Nagle delay on small frames (it reads as ~40 ms handshakes).
      s.setNoDelay(true);
      sockets.add(s);
      s.on("close", () => sockets.delete(s));
      s.on("error", () => {
        client.destroy();
        upstream.destroy();
      });
    }
    client.pipe(upstream);
    upstream.pipe(client);
  });
  // A client that refuses the certificate ends the handshake; that is the point of some tests.
  server.on("tlsClientError", () => {});
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as net.AddressInfo).port;
  return {
    port,
    secure(url) {
      const u = new URL(url);
      u.protocol = u.protocol === "ws:" ? "wss:" : u.protocol === "http:" ? "https:" : u.protocol;
      u.port = String(port);
      return u.toString();
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}
