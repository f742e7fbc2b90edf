import { type ChildProcess, spawn } from "node:child_process";
import net from "node:net";
import { installStrictAws, strictAwsNodeOptions } from "cable-test-servers";

/** A moto server on a free loopback port, for S3, SSM and Secrets Manager without an AWS account. */
export interface Moto {
  endpoint: string;
  /** The environment SDK v3 clients (ours and the worker's) need to talk to it. */
  env: Record<string, string>;
  stop: () => Promise<void>;
}

async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise((resolve) => server.close(resolve));
  return port;
}

export async function startMoto(): Promise<Moto> {
  const port = await freePort();
  const child: ChildProcess = spawn("moto_server", ["-H", "127.0.0.1", "-p", String(port)], { stdio: "ignore" });
  const spawnError = new Promise<never>((_, reject) => child.once("error", (err) => reject(new Error(`moto_server could not start (bash scripts/setup-test-servers.sh installs it): ${err.message}`))));
  const endpoint = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + 30_000;
  for (;;) {
    const ok = await Promise.race([fetch(`${endpoint}/moto-api/`).then((r) => r.ok, () => false), spawnError]);
    if (ok) break;
    if (Date.now() > deadline) {
      child.kill();
      throw new Error(`moto_server did not answer on ${endpoint} within 30 s`);
    }
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  // moto accepts what AWS refuses: calls here and in the workers the tests spawn are held to AWS's
  // documented constraints first (cable-test-servers/strict-aws).
  if (!installStrictAws()) throw new Error("the strict AWS double found no AWS SDK to hook");
  return {
    endpoint,
    env: { AWS_ENDPOINT_URL: endpoint, AWS_ACCESS_KEY_ID: "testing", AWS_SECRET_ACCESS_KEY: "testing", AWS_REGION: "eu-west-2", NODE_OPTIONS: strictAwsNodeOptions() },
    stop: () =>
      new Promise((resolve) => {
        if (child.exitCode !== null) return resolve();
        child.once("exit", () => resolve());
        child.kill();
      }),
  };
}
