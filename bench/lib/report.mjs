// Presenting the results: the machine's facts, a console table, and the markdown section that
// `npm run bench` rewrites in docs/benchmarks.md (between the two markers, nothing else).
import { execFileSync } from "node:child_process";
import { existsSync, readFileSync, statSync, writeFileSync } from "node:fs";
import os from "node:os";
import { RELAYBOX_SUSTAINED_RATE } from "./arrivals.mjs";

/** Which engine was measured: the last commit touching it, whether its tree is dirty, when dist was built. */
export function engineRevision(root) {
  const git = (...args) => {
    try {
      return execFileSync("git", ["-C", root, ...args], { encoding: "utf8" }).trim();
    } catch {
      return "unknown";
    }
  };
  let distBuiltAt = "unknown";
  try {
    distBuiltAt = statSync(`${root}/packages/artillery-engine-cable/dist/index.js`).mtime.toISOString();
  } catch {}
  return {
    commit: git("log", "-1", "--format=%h %s", "--", "packages/artillery-engine-cable"),
    uncommittedChanges: git("status", "--porcelain", "--", "packages/artillery-engine-cable/src") !== "",
    distBuiltAt,
  };
}

export function machineFacts() {
  const cpuinfo = readFileSync("/proc/cpuinfo", "utf8");
  const read = (file) => {
    try {
      return readFileSync(file, "utf8").trim().replace(/\s+/g, " ");
    } catch {
      return "unknown";
    }
  };
  let hardNoFile = "unknown";
  try {
    hardNoFile = execFileSync("bash", ["-c", "ulimit -Hn"], { encoding: "utf8" }).trim();
  } catch {}
  return {
    nproc: os.availableParallelism(),
    cpuModel: /^model name\s*:\s*(.+)$/m.exec(cpuinfo)?.[1] ?? "unknown",
    memoryGiB: Math.round((os.totalmem() / 2 ** 30) * 10) / 10,
    node: process.version,
    kernel: os.release(),
    openFilesHardLimit: hardNoFile,
    ipLocalPortRange: read("/proc/sys/net/ipv4/ip_local_port_range"),
    tcpTwReuse: read("/proc/sys/net/ipv4/tcp_tw_reuse"),
    artilleryWorkers: Math.max(1, os.cpus().length - 1),
  };
}

const kb = (bytes) => (bytes === undefined || bytes === null ? "–" : `${(bytes / 1024).toFixed(1)} KB`);
const mb = (bytes) => (bytes === undefined || bytes === null ? "–" : `${(bytes / 2 ** 20).toFixed(0)} MB`);
const num = (v, digits = 0) => (v === undefined || v === null || Number.isNaN(v) ? "–" : v.toLocaleString("en-US", { maximumFractionDigits: digits, minimumFractionDigits: digits }));
const LABELS = { "bare-ws": "bare ws client", "cable-engine": "Artillery + cable engine", "artillery-ws": "Artillery + built-in ws engine" };

function subjectRows(results) {
  return Object.entries(results.listen).map(([name, l]) => {
    const bareL = results.listen["bare-ws"];
    const lat = results.latency[name];
    const sc = results.scale[name];
    return {
      subject: LABELS[name] ?? name,
      fps: num(l.framesPerCpuSecond),
      fpsRatio: num(l.framesPerCpuSecond / bareL.framesPerCpuSecond, 2),
      delivered: l.receivedFrames === null ? `not counted (target sent ${num(l.targetFramesOut)})` : `${num(l.receivedFrames)} / ${num(l.expectedFrames)}`,
      perVu: kb(l.bytesPerIdleVu),
      perVuScale: sc ? kb(sc.bytesPerIdleVu) : "–",
      memRatio: num((sc?.bytesPerIdleVu ?? l.bytesPerIdleVu) / (results.scale["bare-ws"]?.bytesPerIdleVu ?? bareL.bytesPerIdleVu), 2),
      rss: `${mb(l.rssLargeBytes)} / ${mb(l.rssPeakBytes)}`,
      rtt: lat ? `${num(lat.p50, 2)} / ${num(lat.p99, 2)}` : "–",
      held: sc ? `${num(sc.heldPeak)} / ${num(sc.attempted)}` : "–",
    };
  });
}

const HEADERS = ["subject", "frames/CPU-s", "× bare", "received", "RSS per idle VU at N", "at 20k", "× bare", "RSS at N / peak", "rtt p50 / p99 ms", "max connections"];

export function renderTable(results) {
  const rows = subjectRows(results).map((r) => [r.subject, r.fps, r.fpsRatio, r.delivered, r.perVu, r.perVuScale, r.memRatio, r.rss, r.rtt, r.held]);
  const all = [HEADERS, ...rows];
  const widths = HEADERS.map((_, i) => Math.max(...all.map((row) => String(row[i]).length)));
  const line = (row) => row.map((c, i) => String(c).padEnd(widths[i])).join("  ");
  const goals = results.goals.map((g) => `  ${g.status.padEnd(9)} ${g.id}: ${num(g.value, 3)} (goal ${g.direction === "higher" ? "≥" : "≤"} ${g.limit}, fails past ${g.failAt}) — ${g.what}`);
  return [line(HEADERS), ...rows.map(line), "", ...arrivalSections(results).filter((l) => !l.startsWith("|---")).map((l) => l.replace(/^\| /, "").replace(/ \|$/, "").replaceAll(" | ", "  ")), "", "goals:", ...goals].join("\n");
}

const TIMER = (precise) => (precise ? "Artillery's (preciseArrivals)" : "the engine's (default)");
/** A replay at another sustained rate than RelayBox's says so (`--replay-rate`). */
const replayLabel = (r) => (r.sustainedRate && r.sustainedRate !== RELAYBOX_SUSTAINED_RATE ? `${TIMER(r.precise)}, sustained ${r.sustainedRate}/s` : TIMER(r.precise));

/** Connect cost, arrival accuracy and the RelayBox replay (issue 17), as markdown tables; none for older results. */
function arrivalSections(results) {
  const lines = [];
  const connect = Object.entries(results.connect ?? {});
  if (connect.length) {
    const s = results.settings.connect;
    lines.push(
      `Connect + subscribe, as users run it (arrival timer included): ${num(s.few)} and ${num(s.many)} VUs, each over ${s.seconds} s; CPU of the window ÷ VUs, and the marginal (${num(s.many)} − ${num(s.few)}).`,
      "",
      "| subject | CPU ms per VU, " + num(s.few / s.seconds) + "/s | CPU ms per VU, " + num(s.many / s.seconds) + "/s | marginal ms per VU |",
      "|---|---|---|---|",
      ...connect.map(([name, c]) => `| ${LABELS[name] ?? name} | ${num(c.cpuMsPerVuFew, 3)} | ${num(c.cpuMsPerVuMany, 3)} | ${num(c.marginalCpuMsPerVu, 3)} |`),
      "",
    );
  }
  if (results.arrivals?.length) {
    lines.push(
      "Arrival accuracy: VUs that only record when they started (`function` step), lateness against the uniform schedule; generator CPU per second once the phase is warm (from 3 s in).",
      "",
      "| arrival timer | rate | arrivals | lateness p50 / p99 / max ms | CPU-s per s | CPU-s per 1,000 arrivals |",
      "|---|---|---|---|---|---|",
      ...results.arrivals.map((a) => `| ${TIMER(a.precise)} | ${num(a.rate)}/s | ${num(a.arrivals)} / ${num(a.expected)} | ${num(a.latenessMs.p50, 2)} / ${num(a.latenessMs.p99, 2)} / ${num(a.latenessMs.max, 2)} | ${num(a.cpuPerSecond, 3)} | ${a.cpuSecondsPer1000Arrivals === undefined ? "–" : num(a.cpuSecondsPer1000Arrivals, 2)} |`),
      "",
    );
  }
  const replay = Object.values(results.replay ?? {});
  if (replay.length) {
    const ms = (d) => (d ? `${num(d.p50, 1)} / ${num(d.p95, 1)} / ${num(d.p99, 1)} / ${num(d.max, 1)}` : "–");
    lines.push(
      "RelayBox replay (seeds/004: 5/25/100/20 arrivals/s for 10/10/60/10 s, 100 private rooms, 10 publishes 2 s apart then 20 s listening) against the local target's Pusher endpoint.",
      "",
      "| arrival timer | VUs created / failed | peak connections | generator lag p50 / p95 / p99 / max ms | broadcast latency p50 / p95 / p99 / max ms | CPU-s | errors |",
      "|---|---|---|---|---|---|---|",
      ...replay.map((r) => r.error ? `| ${replayLabel(r)} | did not finish: ${r.error} | | | | | |` : `| ${replayLabel(r)} | ${num(r.vusers.created)} / ${num(r.vusers.failed)} | ${num(r.peakConnections)} | ${ms(r.eventLoopLagMs)} | ${ms(r.broadcastLatencyMs)} | ${num(r.cpuSeconds, 1)} | ${Object.entries(r.errors).map(([k, v]) => `${k} ${v}`).join(", ") || "none"} |`),
      "",
    );
  }
  if (results.realServer) {
    const { target, listen } = results.realServer;
    const s = results.settings.realServer.listen;
    const row = (name) => listen[name] ? `| ${LABELS[name] ?? name} | ${num(listen[name].framesPerCpuSecond)} | ${num(listen[name].framesPerCpuSecond / listen["bare-ws"].framesPerCpuSecond, 2)} | ${num(listen[name].delivery, 4)} |` : null;
    lines.push(
      `The listen workload on a real server, ${target} from the harness: ${num(s.n)} users on one \`$pubsub\` stream, 3 × ${s.broadcasts} broadcasts${s.repeats > 1 ? `, ${s.repeats} alternating runs each, the better counting` : ""}.`,
      "",
      "| subject | frames per CPU-s | × bare | delivery |",
      "|---|---|---|---|",
      ...["bare-ws", "cable-engine"].map(row).filter(Boolean),
      "",
    );
  }
  const peerTables = results.peer?.targets ?? (results.peer?.runs ? { "local target": results.peer } : null);
  if (peerTables) {
    const p = results.peer;
    const ps = results.settings.peer;
    const r3 = (x) => num(x, 3);
    lines.push(
      `Against ${p.version} with xk6-cable, paired runs (the engine, then k6, on the same workloads); the worst run's ratio counts${p.judgedOn ? `, judged on ${p.judgedOn}` : ""}. Connect: whole-process CPU and RSS once ${num(ps.connect.many)} users are subscribed minus ${num(ps.connect.few)}'s, per user; listen: ${num(ps.listen.n)} users, frames received ÷ CPU;${ps.idle ? ` idle: ${num(ps.idle.n)} subscribed users, CPU over ${ps.idle.holdS} s of holding (from ${ps.idle.settleS} s after the last subscribed) per user-second;` : ""} chat: the capacity scenario, ${num(ps.chat.users)} users in ${ps.chat.rooms} rooms, ${ps.chat.rate} messages/s, CPU per delivered frame over ${ps.chat.windowMs / 1000} s.`,
      "",
    );
    for (const [name, t] of Object.entries(peerTables)) {
      lines.push(
        `On ${name}:`,
        "",
        "| run | connect ms per user, engine / k6 | frames per CPU-s, engine / k6 | idle µs per user-second, engine / k6 | chat µs per frame, engine / k6 | RSS per user, engine / k6 | ratios: connect, frames, idle, chat, memory |",
        "|---|---|---|---|---|---|---|",
        ...t.runs.map(({ engine, peer }, i) => {
          const ratio = t.ratios[i];
          // A workload a subject could not finish shows as "failed" in its cell, and no ratio.
          const pair = (workload, figure) => [engine, peer].map((side) => (side[workload]?.error ? "failed" : side[workload] ? figure(side[workload]) : "–")).join(" / ");
          const r = (x) => (x === undefined ? "–" : r3(x));
          return `| ${i + 1} | ${pair("connect", (c) => r3(c.marginalTotalCpuMsPerUser))} | ${pair("listen", (l) => num(l.framesPerCpuSecond))} | ${pair("idle", (x) => num(x.cpuUsPerUserSecond, 1))} | ${pair("chat", (c) => num(c.cpuUsPerFrame, 1))} | ${pair("connect", (c) => kb(c.marginalRssBytesPerUser))} | ${r(ratio.connect)}, ${r(ratio.frames)}, ${r(ratio.idle)}, ${r(ratio.chat)}, ${r(ratio.memory)} |`;
        }),
        ...(t.peerFailed && Object.keys(t.peerFailed).length ? ["", `k6 could not finish: ${Object.entries(t.peerFailed).map(([w, n]) => `${w} in ${n} of ${t.runs.length} runs`).join(", ")} (those runs have no ratio for it; the log is in the results).`] : []),
        "",
      );
    }
  } else if (results.peer?.skipped) {
    lines.push(`k6 + xk6-cable: ${results.peer.skipped}.`, "");
  }
  return lines;
}

export function renderMarkdown(results, resultFile) {
  const m = results.machine;
  const s = results.settings;
  const rows = subjectRows(results).map((r) => `| ${[r.subject, r.fps, r.fpsRatio, r.delivered, r.perVu, r.perVuScale, r.memRatio, r.rss, r.rtt, r.held].join(" | ")} |`);
  const goals = results.goals.map((g) => `| ${g.id} | ${g.what} | ${num(g.value, 3)} | ${g.direction === "higher" ? "≥" : "≤"} ${g.limit} | ${g.failAt} | **${g.status}** |`);
  const scaleNotes = Object.entries(results.scale).map(([name, sc]) => {
    const errs = Object.entries(sc.errors ?? {}).map(([k, v]) => `${k} ${v}`).join(", ") || "none";
    const addrs = sc.sourceAddresses ? Object.entries(sc.sourceAddresses).map(([a, c]) => `${a} ${c}`).join(", ") : "not sampled";
    return `- ${LABELS[name] ?? name}: held ${num(sc.heldPeak)} of ${num(sc.attempted)}, subscribed ${num(sc.subscribedPeak)}; source addresses at the top: ${addrs}; errors: ${errs}; peak RSS ${mb(sc.rssPeakBytes)}.`;
  });
  const lat = results.latency["cable-engine"];
  return [
    `Run of ${results.startedAt} (${results.mode} mode), raw figures in \`${resultFile}\`.`,
    "",
    ...(results.engine ? [`Engine: ${results.engine.commit}${results.engine.uncommittedChanges ? " (with uncommitted changes)" : ""}, dist built ${results.engine.distBuiltAt}.`, ""] : []),
    `Machine: ${m.nproc} cores (${m.cpuModel}), ${m.memoryGiB} GiB, Node ${m.node}, Linux ${m.kernel}; open files hard limit ${m.openFilesHardLimit}; ephemeral ports ${m.ipLocalPortRange}; tcp_tw_reuse ${m.tcpTwReuse}; Artillery worker threads ${m.artilleryWorkers}.`,
    "",
    `Workloads: listen = ${s.listen.n} clients subscribed to BenchmarkChannel (stream "all"), 3 windows of ${s.listen.broadcasts} broadcasts through \`POST /_broadcast\` (frames ÷ CPU of the windows and of Artillery's next metrics flush); memory per idle VU is (RSS at N − RSS at ${s.listen.n0}) ÷ (N − ${s.listen.n0}), after a full GC, at N and (the goal's figure when present) at the scale run's top; latency = ${s.latency.n} clients × ${s.latency.iterations} echo round trips, ${s.latency.thinkMs} ms apart${s.scale ? `; scale = ramp to ${num(s.scale.n)} idle subscribed connections at ${s.scale.ratePerSecond}/s, hold ${s.scale.holdMs / 1000} s` : ""}.`,
    "",
    `| ${HEADERS.join(" | ")} |`,
    `|${HEADERS.map(() => "---").join("|")}|`,
    ...rows,
    "",
    ...arrivalSections(results),
    "| goal | measure | value | goal | fails past | status |",
    "|---|---|---|---|---|---|",
    ...goals,
    "",
    ...(scaleNotes.length ? ["Scale runs:", "", ...scaleNotes, ""] : []),
    `Event-loop lag reported by the engine: ${lat?.eventLoopLag ? `${lat.eventLoopLag.metric} p50 ${lat.eventLoopLag.p50} ms, p99 ${lat.eventLoopLag.p99} ms, max ${lat.eventLoopLag.max} ms (latency run)` : "none (no *lag* metric in the report)"}.`,
  ].join("\n");
}

const START = "<!-- bench:results:start -->";
const END = "<!-- bench:results:end -->";

/** Replaces the generated section of the doc; the hand-written parts around it stay. */
export function writeDocTable(docPath, markdown) {
  const section = `${START}\n${markdown}\n${END}`;
  const doc = existsSync(docPath) ? readFileSync(docPath, "utf8") : `# Benchmarks\n\n${START}\n${END}\n`;
  if (!doc.includes(START) || !doc.includes(END)) throw new Error(`${docPath}: the markers ${START} and ${END} are missing`);
  writeFileSync(docPath, doc.slice(0, doc.indexOf(START)) + section + doc.slice(doc.indexOf(END) + END.length));
}
