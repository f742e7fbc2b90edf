#!/usr/bin/env node
/** `npm run stage -w cable-infra [-- <dir>]`: writes the image's build context (default infra/image/). */
import path from "node:path";
import { DEFAULT_IMAGE_DIR, stageImage } from "./stage.js";

try {
  const dir = process.argv[2] ? path.resolve(process.argv[2]) : DEFAULT_IMAGE_DIR;
  const result = stageImage(dir);
  const summary = result.packages.map((p) => `${p.name}@${p.version} (${p.files.length} files)`).join(", ");
  process.stderr.write(`staged ${result.dir}: ${summary}, worker (${result.workerFiles.length} files)\n`);
} catch (err) {
  process.stderr.write(`stage: ${(err as Error).message}\n`);
  process.exit(1);
}
