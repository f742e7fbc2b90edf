import { freePort, spawnServer, type RunningServer } from "./process.js";
import { installStrictAws, strictAwsNodeOptions } from "./strict-aws.js";

/** moto's server on a free loopback port: S3, SSM, Secrets Manager, CloudFormation, ECS… without an AWS account. */
export interface Moto {
  endpoint: string;
  /** What the SDK (in this process, and in the CLIs and workers a test spawns) needs to talk to moto. */
  env: Record<string, string>;
  stop: () => Promise<void>;
}

export interface MotoOptions {
  /** AWS_REGION in `env` (default us-east-1). */
  region?: string;
  /** Where moto's request recorder writes (off until it is started); by default a file in moto's working directory. */
  recordTo?: string;
}

export async function startMoto(options: MotoOptions = {}): Promise<Moto> {
  const port = await freePort();
  let server: RunningServer;
  try {
    server = await spawnServer({ command: "moto_server", args: ["-H", "127.0.0.1", "-p", String(port)], port, ...(options.recordTo ? { env: { MOTO_RECORDER_FILEPATH: options.recordTo } } : {}) });
  } catch (err) {
    throw new Error(`${(err as Error).message}\n(bash scripts/setup-test-servers.sh installs moto_server)`);
  }
  const endpoint = `http://127.0.0.1:${port}`;
  // moto accepts what AWS refuses: every call made against it, here and in the CLIs and workers the
  // tests spawn (they inherit NODE_OPTIONS), is held to AWS's documented constraints first.
  if (!installStrictAws()) throw new Error("the strict AWS double found no AWS SDK to hook");
  const env = { AWS_ENDPOINT_URL: endpoint, AWS_ACCESS_KEY_ID: "testing", AWS_SECRET_ACCESS_KEY: "testing", AWS_REGION: options.region ?? "us-east-1", NODE_OPTIONS: strictAwsNodeOptions() };
  Object.assign(process.env, env);
  // Tasks advance one state per DescribeTasks call by default; make them advance with time instead.
  const response = await fetch(`${endpoint}/moto-api/state-manager/set-transition`, {
    method: "POST",
    body: JSON.stringify({ model_name: "ecs::task", transition: { progression: "time", seconds: 2 } }),
  });
  if (!response.ok) throw new Error(`moto state manager: HTTP ${response.status}`);
  return { endpoint, env, stop: () => server.stop() };
}
