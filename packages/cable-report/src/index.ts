// The package is both the Artillery plugin (`config.plugins: { cable-report: {} }`
// loads `artillery-plugin-cable-report` and wants `Plugin`) and the merge library.
export { Plugin, LEGACY_METRICS_FORMAT } from "./plugin.js";
export { mergeResults, mergeRegions, loadResultsDir, loadBaseline, type Expectations, type RegionTasks } from "./results.js";
export { renderMarkdown, DEFAULT_MAX_BYTES, type RenderOptions } from "./markdown.js";
export { compareServers, serverFiguresSection, serverGateSection, serverRegressions, shiftTask, type ServerProcessFigures, type ServerRun } from "./servers.js";
export { findRegressions, gateCell, onlyInBaseline, quantileInterval, withBaselineVerdict, GATE, type Regression, type GateVerdict } from "./compare.js";
export {
  baselineCaveats,
  baselineMismatch,
  cleanServerName,
  isServerSoftwareCounter,
  judgeBaseline,
  mergeTargets,
  parseServerIdentity,
  redactTarget,
  serverFromCounters,
  SERVER_SOFTWARE_PREFIX,
  TargetFold,
  type BaselineVerdict,
  type RunIdentity,
  type Target,
} from "./target.js";
export { detectSaturation, lateCauseOf, lateSecondsOf, SATURATION_THRESHOLDS, starvedFigures, type GeneratorHealth, type LateSeconds, type SaturationVerdict } from "./saturation.js";
export { loadTask, type TaskResult, type HistogramSummary } from "./task.js";
export { ResultsInputError } from "./input.js";
export { mergeSketches, approximateDistribution, summarizeSketch, generatorHealth, EVENT_LOOP_LAG } from "./merge.js";
export { mergedSchema, ALL_REGIONS, type MergedResults, type Column, type RegionColumn, type Distribution, type GeneratorTask, type RejectedFile } from "./model.js";
export { sidecarPathFor, sidecarSchema, SIDECAR_SUFFIX, type Sidecar } from "./sidecar.js";
export { writeFileAtomic } from "./atomic-write.js";
export { CpuMeter, cpuPercent, generatorWorkers, periodRecordSchema, periodSketches, phaseStartSchema, recordPeriod, PERIOD_MS, type ArtilleryPeriodStats, type CpuSample, type PeriodRecord, type PhaseStart } from "./period.js";
export { gridPeriod, isLatencyMetric, mainLatency } from "./series.js";
export { describeRecovery, describeSpikes, describeVerdicts, findSpikes } from "./recovery.js";
export { phaseRate } from "./phases.js";
export { describeStorm, judgeStorm } from "./storms.js";
export { failedUsers, runState, stateWords, type RunState } from "./headline.js";
export { readServerSeries, SERVER_METRICS_FILE } from "./results.js";
export { serverSeriesSchema, type Series, type ServerSeries, type Timeline } from "./model.js";
export { markdownToHtml, pageHtml, renderHtml, renderReportPage, reportPageParts, type HtmlOptions, type PageParts } from "./html.js";
export { BUSIEST_TASK, liveResults, type LivePeriodFold, type LiveRegion, type LiveRun } from "./live.js";
export { LivePageServer, type LiveServerOptions, type LiveTransfer } from "./live-server.js";
export { evaluateVerdictCheck, judgeVerdictChecks, parseVerdictCheck, verdictCheckProblems, VerdictCheckError, type VerdictCheck } from "./verdict-checks.js";
export { JUDGED_BY_RUNNER_ENV, judgeFailedUsers, overLineMessage, readMaxFailedUsers, type FailedUsersVerdict, type MaxFailedUsers } from "artillery-engine-cable/failed-users";
export { inline, LIMITS, plain } from "./text.js";
export { historyRecord, scenarioHash, HISTORY_FORMAT, RUN_KINDS, type HistoryRecord, type RunIdentity as HistoryRunIdentity, type RunKind } from "./history/record.js";
export { HistoryInputError, openHistory, parseHistoryLocation, type HistoryRead, type HistoryStore } from "./history/store.js";
export { HISTORY_GATE, judgeAgainstHistory, type HistoryVerdict } from "./history/gate.js";
