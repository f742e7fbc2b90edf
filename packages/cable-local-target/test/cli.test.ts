import { spawn } from "node:child_process";
import { existsSync, mkdtempSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { describe, expect, test } from "vitest";
import { optionsFromArgs } from "../src/cli.js";
import { connect } from "./helpers.js";

describe("flags", () => {
  test("map to target options and faults", () => {
    expect(
      optionsFromArgs([
        "--port", "9000",
        "--allow-anonymous",
        "--pusher-key", "k",
        "--error-style", "sockudo",
        "--drop-ratio", "0.25",
        "--close-after-ms", "1000",
        "--disconnect-reason", "server_restart",
        "--stop-pinging",
      ]),
    ).toEqual({
      host: undefined,
      port: 9000,
      cable: { requireUid: false },
      pusher: { key: "k", errorStyle: "sockudo" },
      faults: { dropBroadcastRatio: 0.25, closeAfterMs: 1000, disconnectReason: "server_restart", stopPinging: true },
    });
  });

  test("AnyCable extended-protocol flags map to cable options; --control enables POST /_restart", () => {
    const options = optionsFromArgs([
      "--history-limit", "10",
      "--history-ttl-ms", "2000",
      "--sessions-ttl-ms", "0",
      "--presence-ttl-ms", "500",
      "--streams-whisper",
      "--streams-presence",
      "--control",
    ]);
    expect(options).toMatchObject({
      cable: { historyLimit: 10, historyTtlMs: 2000, sessionsTtlMs: 0, presenceTtlMs: 500, streamsWhisper: true, streamsPresence: true },
      control: true,
    });
    expect(() => optionsFromArgs(["--history-limit", "many"])).toThrow(/--history-limit: expected a number/);
  });

  test("the known capacities: --capacity, --rate-capacity and their delay", () => {
    expect(optionsFromArgs(["--capacity", "50", "--rate-capacity", "27.5", "--over-capacity-delay-ms", "800"])).toMatchObject({
      faults: { capacityConnections: 50, rateCapacity: 27.5, overCapacityDelayMs: 800 },
    });
    expect(() => optionsFromArgs(["--rate-capacity", "fast"])).toThrow(/--rate-capacity: expected a number/);
  });

  test("the known-truth knobs: --over-capacity-linger-ms, --leak-mb-per-minute, --leak-max-mb, --leak-delay-ms-per-minute", () => {
    expect(
      optionsFromArgs(["--capacity", "2", "--over-capacity-linger-ms", "1500", "--leak-mb-per-minute", "10", "--leak-max-mb", "64", "--leak-delay-ms-per-minute", "20"]),
    ).toMatchObject({
      faults: { capacityConnections: 2, overCapacityLingerMs: 1500, leakMbPerMinute: 10, leakMaxMb: 64, leakDelayMsPerMinute: 20 },
    });
    expect(() => optionsFromArgs(["--leak-mb-per-minute", "lots"])).toThrow(/--leak-mb-per-minute: expected a number/);
    expect(() => optionsFromArgs(["--over-capacity-linger-ms=-1"])).toThrow(/faults\.overCapacityLingerMs/);
    expect(() => optionsFromArgs(["--leak-max-mb", "100000"])).toThrow(/faults\.leakMaxMb/);
  });

  test("a faults file gives per-channel overrides; flags win over it", () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), "clt-"));
    const file = path.join(dir, "faults.json");
    writeFileSync(file, JSON.stringify({ confirmDelayMs: 100, channels: { ChatChannel: { rejectSubscriptions: true } } }));
    const options = optionsFromArgs(["--faults", file, "--confirm-delay-ms", "5"]);
    expect(options).not.toBe("help");
    if (options !== "help") expect(options.faults).toEqual({ confirmDelayMs: 5, channels: { ChatChannel: { rejectSubscriptions: true } } });
  });

  test("bad input names the flag or the file field", () => {
    expect(() => optionsFromArgs(["--port", "abc"])).toThrow(/--port: expected a number/);
    expect(() => optionsFromArgs(["--drop-ratio", "3"])).toThrow(/faults\.dropBroadcastRatio/);
    expect(() => optionsFromArgs(["--error-style", "x"])).toThrow(/--error-style/);
    expect(() => optionsFromArgs(["--no-such-flag"])).toThrow(/Unknown option/);
    const dir = mkdtempSync(path.join(os.tmpdir(), "clt-"));
    const file = path.join(dir, "faults.json");
    writeFileSync(file, JSON.stringify({ channels: { X: { confirmDelayMs: "slow" } } }));
    expect(() => optionsFromArgs(["--faults", file])).toThrow(new RegExp(`${file.replace(/[.]/g, "\\.")}\\.channels\\.X\\.confirmDelayMs`));
    expect(() => optionsFromArgs(["--faults", path.join(dir, "missing.json")])).toThrow(/--faults: cannot read/);
  });

  test("--help", () => {
    expect(optionsFromArgs(["-h"])).toBe("help");
  });
});

test("the built command starts, prints its URLs, serves, and stops on SIGTERM", async () => {
  const cli = path.resolve(__dirname, "../dist/cli.js");
  expect(existsSync(cli), `${cli} is missing: run npm run build -w cable-local-target`).toBe(true);
  const child = spawn(process.execPath, [cli, "--allow-anonymous"], { stdio: ["ignore", "pipe", "pipe"] });
  try {
    const line = await new Promise<string>((resolve, reject) => {
      let out = "";
      const timer = setTimeout(() => reject(new Error(`no output within 10 s: ${out}`)), 10_000);
      child.stdout.on("data", (chunk: Buffer) => {
        out += chunk.toString();
        if (out.includes("\n")) {
          clearTimeout(timer);
          resolve(out.split("\n")[0]);
        }
      });
      child.once("exit", (code) => reject(new Error(`exited with ${code}: ${out}`)));
    });
    const printed = JSON.parse(line);
    expect(printed.cableUrl).toMatch(/^ws:\/\/127\.0\.0\.1:\d+\/cable$/);
    expect(line).not.toContain("local-secret");
    const client = await connect(printed.cableUrl, { protocols: ["actioncable-v1-json"] });
    expect(await client.next()).toEqual({ type: "welcome" });
    const exited = new Promise<number | null>((resolve) => child.once("exit", resolve));
    child.kill("SIGTERM");
    expect(await exited).toBe(0);
    await client.closed;
  } finally {
    if (child.exitCode === null) child.kill("SIGKILL");
  }
});
