#!/usr/bin/env node
/**
 * The task entrypoint: one task of one run (see ../README.md). Configured only by
 * environment variables (config.ts); exits with the code in status.json and prints a one-line reason.
 */
import type { ChildProcess } from "node:child_process";
import os from "node:os";
import path from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { S3Client } from "@aws-sdk/client-s3";
import { SecretsManagerClient } from "@aws-sdk/client-secrets-manager";
import { SSMClient } from "@aws-sdk/client-ssm";
import { ConfigError, readWorkerConfig } from "./config.js";
import { runTask } from "./run-task.js";
import { resolveSecrets } from "./secrets.js";
import { EXIT } from "./status.js";
import { openStore } from "./open-store.js";
import { discoverTaskId } from "./task-id.js";

const log = (line: string) => process.stderr.write(`[cable-worker] ${line}\n`);

async function main(): Promise<number> {
  const config = readWorkerConfig(process.env, path.join(os.tmpdir(), "cable-worker"));
  const taskId = config.taskId ?? (await discoverTaskId(process.env));
  const store = openStore(config.store, { s3Client: () => new S3Client({}) });
  log(`run ${config.runId}, region ${config.region}, task ${taskId}, store ${store.location}`);

  // ECS StopTask sends SIGTERM: pass it on so Artillery ends and the partial results still get uploaded.
  let artillery: ChildProcess | undefined;
  let stopSignal: NodeJS.Signals | undefined;
  const stopping = new AbortController();
  for (const signal of ["SIGTERM", "SIGINT"] as const) {
    process.on(signal, () => {
      stopSignal ??= signal;
      stopping.abort();
      log(`received ${signal}, stopping artillery`);
      artillery?.kill(signal);
    });
  }

  // Artillery must not see the secret *names* map, nor think it is the worker.
  const { CABLE_SECRETS: _names, ...baseEnv } = process.env;
  const status = await runTask(
    { ...config, taskId },
    {
      store,
      resolveSecrets: (refs) => resolveSecrets(refs, { ssm: () => new SSMClient({}), secretsManager: () => new SecretsManagerClient({}) }),
      baseEnv,
      now: Date.now,
      // A stop during a wait (for go, for startAt) ends the wait; runTask then sees stopSignal.
      sleep: (ms, signal) => sleep(ms, undefined, { signal: signal ? AbortSignal.any([stopping.signal, signal]) : stopping.signal }).catch(() => undefined),
      log,
      echo: process.stdout,
      onArtillerySpawn: (child) => (artillery = child),
      stopSignal: () => stopSignal,
    },
  );
  log(status.reason === null ? `done: results in ${store.location}/` : `FAILED (exit ${status.exitCode}): ${status.reason}`);
  return status.exitCode;
}

main().then(
  (code) => process.exit(code),
  (err: Error) => {
    log(`FAILED (exit ${EXIT.setup}): ${err instanceof ConfigError ? err.message : `${err.name}: ${err.message}`}`);
    process.exit(EXIT.setup);
  },
);
