// `--abort-on '<condition> [for <duration>]'`: stop every task early when the run is already
// lost, as k6's thresholds with abortOnFail do, but judged on the merged figures of every task of
// every region. The condition is the capacity search's SLO syntax written the other way round (what
// must NOT happen): `cable.broadcast_latency.p95>2000 for 30s`, `errors>5%`, `vusers.failed>100`.
// It is judged per 10 s metrics period, once every task has sent that period (or it is late):
// - a histogram statistic over the period's sketches merged across all tasks;
// - a counter's count in the period; with `%`, per user active in it (those active at its start
//   plus those who arrived during it), so a steady soak with no arrivals still has a denominator;
// - `for <duration>`: the condition must hold in every period of an unbroken stretch at least that
//   long (Prometheus' `for:`); without it, one period suffices. A period without samples of the
//   metric breaks the stretch: nothing was measured, so nothing is judged.
import { PERIOD_MS } from "artillery-plugin-cable-report";
import { formatDuration } from "../progress.js";
import { FanoutInputError } from "../errors.js";
import { parseDuration } from "../options.js";
import { compare, counterValue, parseSlo, statOf, type Slo } from "../slo.js";
import { periodRows, rowSketch, tasksExpected, type LiveSnapshot, type TasksExpected } from "./region-live.js";
import { periodComplete } from "./view.js";

export interface AbortCondition {
  text: string;
  slo: Slo;
  /** How long the condition must hold; one period when not given. */
  forMs: number;
}

export interface AbortVerdict {
  condition: string;
  /** End of the last period that made it hold, epoch ms (task clock). */
  at: number;
  /** "cable.broadcast_latency.p95 2,480 ms > 2000 in 3 periods (0:40–1:10)" */
  figure: string;
}

const FOR = /^(.*?)\s+for\s+(\S+)\s*$/;

export function parseAbortOn(text: string): AbortCondition {
  const match = FOR.exec(text);
  const expression = match ? match[1] : text;
  let slo: Slo;
  try {
    slo = parseSlo(expression);
  } catch (err) {
    throw new FanoutInputError((err as Error).message.replace(/^--slo "[^"]*": write <metric><op><bound>/, `--abort-on "${text}": write <metric><op><bound> [for <duration>]`).replace(/^--slo/, "--abort-on"));
  }
  const forMs = match ? parseDuration(`--abort-on "${text}"`, match[2]) : PERIOD_MS;
  if (forMs < PERIOD_MS) throw new FanoutInputError(`--abort-on "${text}": for ${match![2]} is shorter than one 10 s metrics period, the shortest stretch it can be judged on`);
  return { text: text.trim(), slo, forMs };
}

interface PeriodFigure {
  period: number;
  value: number | null;
}

/** The condition's figure in each period that every task of every region has sent, from the regions' merged periods. */
export function periodFigures(condition: AbortCondition, live: LiveSnapshot, expected: TasksExpected, now: number): PeriodFigure[] {
  const { slo } = condition;
  const regions = [...live.values()];
  return periodRows(regions).flatMap((row) => {
    if (!regions.every((region) => periodComplete(region, tasksExpected(expected, region.region), row.period, now))) return [];
    if (slo.kind === "histogram") {
      const merged = rowSketch(row, slo.metric);
      return [{ period: row.period, value: merged && merged.count > 0 ? Math.round(statOf(merged, slo.stat) * 10) / 10 : null }];
    }
    const count = counterValue(row.counters, slo.metric);
    if (!slo.perUser) return [{ period: row.period, value: count }];
    const users = row.activeBefore + (row.counters["vusers.created"] ?? 0);
    return [{ period: row.period, value: users > 0 ? Math.round((1000 * count) / users) / 10 : null }];
  });
}

/** The first condition that holds over its stretch, judged on every task of every region together. */
export function judgeAbort(conditions: AbortCondition[], live: LiveSnapshot, expected: TasksExpected, now: number, start: number): AbortVerdict | null {
  for (const condition of conditions) {
    const { slo } = condition;
    let stretch: PeriodFigure[] = [];
    for (const f of periodFigures(condition, live, expected, now)) {
      const contiguous = stretch.length === 0 || f.period === stretch[stretch.length - 1].period + PERIOD_MS;
      if (f.value === null || !compare(f.value, slo.op, slo.bound)) {
        stretch = [];
        continue;
      }
      stretch = contiguous ? [...stretch, f] : [f];
      if (stretch.length * PERIOD_MS >= condition.forMs) {
        const unit = slo.kind === "histogram" ? " ms" : slo.perUser ? "% of users" : "";
        const worst = slo.op.startsWith("<") ? Math.min(...stretch.map((s) => s.value!)) : Math.max(...stretch.map((s) => s.value!));
        const name = slo.kind === "histogram" ? `${slo.metric}.${slo.stat}` : slo.metric;
        const first = stretch[0].period;
        const end = f.period + PERIOD_MS;
        return {
          condition: condition.text,
          at: end,
          figure: `${name} ${worst.toLocaleString("en-US")}${unit} ${slo.op} ${slo.bound} in ${stretch.length} period${stretch.length === 1 ? "" : "s"} (${formatDuration(first - start)}–${formatDuration(end - start)})`,
        };
      }
    }
  }
  return null;
}
