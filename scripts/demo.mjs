// The README's first command (`npm start`): the whole pipeline with no AWS account. It starts the
// local target on a free loopback port, runs scenarios/chat.yml from two local "regions" (two worker
// processes each: the same task entrypoint the Fargate tasks run, with a directory in place of S3),
// merges their results exactly, and prints where report.md is.
import { spawn } from "node:child_process";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { createRequire } from "node:module";

const require = createRequire(import.meta.url);
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const { startTarget } = require("cable-local-target");

const target = await startTarget({ port: 0 });
console.log(`local target: ${target.cableUrl} (Action Cable), ${target.pusherUrl} (Pusher)`);

const phases = [{ name: "demo", duration: Number(process.env.DEMO_DURATION ?? 10), arrivalRate: Number(process.env.DEMO_RATE ?? 5) }];
const fanout = path.join(root, "packages/cable-fanout/bin/cable-fanout.js");
const args = [
  fanout, "run", path.join(root, "scenarios/chat.yml"),
  "--local", "--regions", "local-a,local-b", "--count", "2",
  "--target", target.cableUrl,
  "--overrides", JSON.stringify({ config: { phases } }),
  "--out", path.join(root, "results"),
];
const child = spawn(process.execPath, args, { stdio: ["ignore", "pipe", "inherit"], env: { ...process.env, ARTILLERY_DISABLE_TELEMETRY: "true" } });
let report = "";
child.stdout.on("data", (chunk) => {
  report += chunk;
  process.stdout.write(chunk);
});
const code = await new Promise((resolve) => child.on("close", resolve));
await target.close();
if (report.trim()) console.log(`\nThe per-region comparison: ${path.relative(process.cwd(), report.trim().split("\n").pop())}`);
process.exit(code ?? 1);
