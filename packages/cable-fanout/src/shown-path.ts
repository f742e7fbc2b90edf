import path from "node:path";

/**
 * A file of the results as the user named their folder: absolute under an absolute `--out`, else
 * relative to where they are (`results/<id>/report.md`), never a `../../tmp/…` they did not write.
 */
export function shownPath(file: string, out: string): string {
  return path.isAbsolute(out) ? file : path.relative(process.cwd(), file) || ".";
}
