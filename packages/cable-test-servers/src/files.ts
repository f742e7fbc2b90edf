import { mkdir, writeFile } from "node:fs/promises";
import path from "node:path";

/** Writes files (relative path → content) under dir. */
export async function writeTree(dir: string, files: Record<string, string>): Promise<void> {
  for (const [rel, content] of Object.entries(files)) {
    const file = path.join(dir, rel);
    await mkdir(path.dirname(file), { recursive: true });
    await writeFile(file, content);
  }
}
