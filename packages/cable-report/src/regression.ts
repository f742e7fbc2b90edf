// What the regression gate reports for one failed cell (compare.ts) or verdict (verdict-gate.ts).

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
  /** 95% interval of the change in percent (may be ±Infinity). */
  interval: [number, number];
  /** Why it counts, in words: the three conditions with their numbers. */
  reason: string;
}
