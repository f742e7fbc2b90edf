// Baseline comparison, pure: the change of each numeric cell and whether it is
// a regression beyond the threshold.
import type { Column, MergedResults } from "./model.js";
import { tableRows, type NumericRow } from "./rows.js";

export interface Change {
  /** Percent change from the baseline; Infinity when the baseline was 0. */
  percent: number;
  regression: boolean;
}

export interface Regression extends Change {
  row: string;
  column: string;
  baseline: number;
  current: number;
}

/** `worse` decides the direction: a rise in latency or errors, a fall in completed users. */
export function changeOf(row: NumericRow, current: number, baseline: number, thresholdPercent?: number): Change {
  const percent = baseline === 0 ? (current === 0 ? 0 : Infinity) : ((current - baseline) / Math.abs(baseline)) * 100;
  const worse = row.worse === "up" ? percent : row.worse === "down" ? -percent : 0;
  return { percent, regression: thresholdPercent !== undefined && worse > thresholdPercent };
}

export function baselineColumn(baseline: MergedResults | undefined, name: string): Column | undefined {
  if (!baseline) return undefined;
  return baseline.all.name === name ? baseline.all : baseline.regions.find((r) => r.name === name && r.tasks > 0);
}

/** Every regression in every row (no row limits) and column, all-regions column included. */
export function findRegressions(merged: MergedResults, baseline: MergedResults, thresholdPercent: number): Regression[] {
  const regressions: Regression[] = [];
  const rows = tableRows(merged, { maxErrorRows: Infinity }).filter((r): r is NumericRow => r.kind === "numeric");
  for (const column of [...merged.regions, merged.all]) {
    const before = baselineColumn(baseline, column.name);
    if (!before) continue;
    for (const row of rows) {
      const current = row.value(column);
      const previous = row.value(before);
      if (current === null || previous === null) continue;
      const change = changeOf(row, current, previous, thresholdPercent);
      if (change.regression) {
        regressions.push({ row: `${row.section}: ${row.label}`, column: column.name, baseline: previous, current, ...change });
      }
    }
  }
  return regressions;
}
