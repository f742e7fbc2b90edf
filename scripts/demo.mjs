// The README's first command (`npm start`): the chat scenario against the local target, with no
// Ruby, Rust or AWS account. It starts the target on a free loopback port, runs the real
// `artillery run` against it, and prints Artillery's summary with the cable metrics.
import { spawn } from "node:child_process";
import { mkdirSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { createRequire } from "node:module";

const require = createRequire(import.meta.url);
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const { startTarget } = require("cable-local-target");

const target = await startTarget({ port: 0 });
const out = path.join(root, "results", "demo");
mkdirSync(out, { recursive: true });
const report = path.join(out, "chat.json");
console.log(`local target: ${target.cableUrl} (Action Cable), ${target.pusherUrl} (Pusher)`);

const artillery = path.join(path.dirname(require.resolve("artillery/package.json")), "bin", "run");
const phases = [{ name: "demo", duration: Number(process.env.DEMO_DURATION ?? 10), arrivalRate: Number(process.env.DEMO_RATE ?? 5) }];
const child = spawn(
  process.execPath,
  [artillery, "run", "--target", target.cableUrl, "--overrides", JSON.stringify({ config: { phases } }), "-o", report, path.join(root, "scenarios/chat.yml")],
  { stdio: "inherit", env: { ...process.env, ARTILLERY_DISABLE_TELEMETRY: "true" } },
);
const code = await new Promise((resolve) => child.on("close", resolve));
await target.close();
console.log(`\nJSON report: ${path.relative(process.cwd(), report)}`);
process.exit(code ?? 1);
