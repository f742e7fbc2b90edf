#!/usr/bin/env node
/** `npm run lock-image -w cable-infra`: regenerates docker/package-lock.json (see lockImage). */
import { mkdtempSync, rmSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { lockImage } from "./stage.js";

const scratch = mkdtempSync(path.join(os.tmpdir(), "cable-image-lock-"));
try {
  process.stderr.write(`wrote ${lockImage(scratch)}\n`);
} catch (err) {
  process.stderr.write(`lock-image: ${(err as Error).message}\n`);
  process.exitCode = 1;
} finally {
  rmSync(scratch, { recursive: true, force: true });
}
