import { existsSync } from "node:fs";
import http from "node:http";
import type { AddressInfo } from "node:net";
import path from "node:path";
import { type NodeRun, runNode } from "cable-test-servers";

export const WORKER_MAIN = path.resolve(__dirname, "../dist/main.js");

export function requireBuiltWorker(): void {
  if (!existsSync(WORKER_MAIN)) throw new Error(`${WORKER_MAIN} is missing: run \`npm run build -w cable-worker\` first`);
}

/** A loopback HTTP server that records each request's path and headers. */
export async function startRecordingServer(): Promise<{ url: string; requests: http.IncomingHttpHeaders[]; paths: string[]; close: () => Promise<void> }> {
  const requests: http.IncomingHttpHeaders[] = [];
  const paths: string[] = [];
  const server = http.createServer((req, res) => {
    requests.push(req.headers);
    paths.push(req.url ?? "");
    res.writeHead(200, { "content-type": "application/json" }).end('{"ok":true}');
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    paths,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

/**
 * A bundle whose scenario uses a payload file, a plain env var, and (optionally) secret env vars,
 * each sent as the header `x-<name>` and logged as "<name> is <value>".
 */
export function httpBundle(opts: { startAt?: number; secretVars?: string[]; extraManifest?: Record<string, unknown> } = {}): Record<string, string> {
  const vars = opts.secretVars ?? [];
  const secretHeader = vars.length ? `\n          headers:${vars.map((v) => `\n            x-${v.toLowerCase()}: "{{ $env.${v} }}"`).join("")}` : "";
  const secretLog = vars.map((v) => `\n      - log: "${v} is {{ $env.${v} }}"`).join("");
  return {
    "run.json": JSON.stringify({
      scenario: "scenarios/smoke.yml",
      ...(opts.startAt !== undefined ? { startAt: opts.startAt } : {}),
      env: { TARGET_PATH: "/hello" },
      ...opts.extraManifest,
    }),
    "scenarios/smoke.yml": `config:
  target: "http://127.0.0.1:1"
  phases:
    - arrivalCount: 3
      duration: 1
  payload:
    path: "../data/users.csv"
    fields: ["user"]
    order: sequence
scenarios:
  - flow:${secretLog}
      - get:
          url: "{{ $env.TARGET_PATH }}?user={{ user }}"${secretHeader}
`,
    "data/users.csv": "alice\nbob\ncarol\n",
  };
}

export function runWorker(env: NodeJS.ProcessEnv, main: string = WORKER_MAIN, timeoutMs = 90_000): Promise<NodeRun> {
  return runNode(main, [], { env, timeoutMs });
}
