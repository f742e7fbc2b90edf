import { readdirSync, readFileSync } from "node:fs";
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

/** Every file under `dir` (the first 5,000), and those whose bytes (read as latin1) `match`: where a secret may have been written. */
export function filesHolding(dir: string, match: (text: string) => boolean): { files: number; leaks: string[] } {
  const leaks: string[] = [];
  let files = 0;
  const walk = (d: string) => {
    for (const entry of readdirSync(d, { withFileTypes: true })) {
      const file = path.join(d, entry.name);
      if (entry.isDirectory()) walk(file);
      else if (entry.isFile() && ++files < 5_000 && match(readFileSync(file, "latin1"))) leaks.push(file);
    }
  };
  walk(dir);
  return { files, leaks };
}
