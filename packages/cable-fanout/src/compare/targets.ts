// `compare`'s flags: the servers by name, and what is read of each.
import { FanoutInputError } from "../errors.js";
import { parseHttpUrl } from "../options.js";
import type { CompareTarget } from "./run.js";

export const COMPARE_HELP = `
Each --target is run in turn with the same scenario, regions and task count (as \`run\` with
--target URL would), a --pause between them; its results go to <out>/<compareId>/<NAME>/ with its
own report.md and report.html. Then <out>/<compareId>/report.md and merged.json put the servers side
by side, a column each, latencies merged exactly per server, the generator's saturation per column.
Each run's series start where the first's did, so their verdicts over time compare.

The servers' own figures, as the seed benchmarks give them:
  --server-pid NAME=PID[,PID] a server on this machine: memory idle → peak → after, CPU (its child
                              processes counted: puma's workers, php's; several pids are summed:
                              anycable-go and its RPC app)
  --server-metrics NAME=URL   a Prometheus endpoint (anycable-go --metrics_http, Sockudo's or
                              Soketi's metrics port): charted in that server's own report

  cable-fanout compare scenarios/pusher-broadcast.yml --local --regions local \\
    --target soketi=ws://127.0.0.1:6001 --target reverb=ws://127.0.0.1:8080 \\
    --server-pid soketi=4242 --server-pid reverb=4343

The first --target is the reference: "Against <first>" lists every gated cell (latency
percentiles, failed users, errors) where another server is worse by --fail-on-regression (10% when
not given) significantly and above the floor, the gate a baseline comparison uses.

Exit status: 0 done; 1 a server worse than the first beyond --fail-on-regression; 4 a server left no
results (its column is empty); 7 interrupted; else the first failing run's own status.`;

const NAME = /^[A-Za-z0-9][A-Za-z0-9._-]{0,35}$/;

function split(flag: string, text: string): [string, string] {
  const at = text.indexOf("=");
  if (at <= 0) throw new FanoutInputError(`${flag} wants NAME=VALUE, not "${text}"`);
  const name = text.slice(0, at).trim();
  if (!NAME.test(name)) throw new FanoutInputError(`${flag}: "${name}" is not a name for a column (1–36 letters, digits, ".", "_" or "-")`);
  return [name, text.slice(at + 1).trim()];
}

/** --target NAME=URL (two or more), with --server-metrics and --server-pid by the same names. */
export function parseCompareTargets(targets: string[], metrics: string[], pids: string[]): CompareTarget[] {
  const parsed: CompareTarget[] = [];
  for (const text of targets) {
    const [name, url] = split("--target", text);
    if (parsed.some((t) => t.name === name)) throw new FanoutInputError(`--target names ${name} twice`);
    if (!/^(wss?|https?):\/\/[^\s]+$/.test(url)) throw new FanoutInputError(`--target ${name}: "${url}" is not a ws://, wss://, http:// or https:// URL`);
    parsed.push({ name, url });
  }
  if (parsed.length < 2) throw new FanoutInputError(`compare wants two --target NAME=URL or more, got ${parsed.length}`);
  const byName = (flag: string, name: string) => {
    const target = parsed.find((t) => t.name === name);
    if (!target) throw new FanoutInputError(`${flag} names ${name}, which no --target is (${parsed.map((t) => t.name).join(", ")})`);
    return target;
  };
  for (const text of metrics) {
    const [name, url] = split("--server-metrics", text);
    byName("--server-metrics", name).serverMetricsUrl = parseHttpUrl("--server-metrics", url);
  }
  for (const text of pids) {
    const [name, list] = split("--server-pid", text);
    const pids = list.split(",").map((p) => p.trim());
    const bad = pids.find((p) => !/^[1-9]\d*$/.test(p));
    if (bad !== undefined) throw new FanoutInputError(`--server-pid ${name}: "${bad}" is not a process id`);
    byName("--server-pid", name).serverPids = pids.map(Number);
  }
  return parsed;
}
