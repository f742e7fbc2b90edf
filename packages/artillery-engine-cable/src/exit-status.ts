import { JUDGED_BY_RUNNER_ENV, judgeFailedUsers, overLineMessage, workerCanJudge, type MaxFailedUsers } from "./failed-users.js";

interface ArtilleryExit {
  suggestedExitCode?: number;
  globalEvents?: { emit(event: string, ...args: unknown[]): unknown };
}

/**
 * This worker thread's side of the failure line: the thread's own failed users over a count make
 * `artillery run` exit 1 (Artillery's `suggestedExitCode`, which a worker's global forwards to the
 * main thread), said once in the console. With the report plugin listed, the plugin judges every
 * thread's users together and says it once; a fan-out task leaves it to its runner.
 */
export class FailureLine {
  private failed = 0;
  private said = false;
  private readonly judging: boolean;

  constructor(
    private readonly max: MaxFailedUsers,
    pluginJudges: boolean,
    env: NodeJS.ProcessEnv = process.env,
    private readonly artillery: () => ArtilleryExit | undefined = () => (globalThis as { artillery?: ArtilleryExit }).artillery,
  ) {
    this.judging = workerCanJudge(max) && !pluginJudges && !env[JUDGED_BY_RUNNER_ENV];
  }

  userFailed(): void {
    if (!this.judging || this.said) return;
    this.failed++;
    const verdict = judgeFailedUsers(this.max, { created: 0, failed: this.failed });
    if (!verdict.over) return;
    this.said = true;
    const artillery = this.artillery();
    if (!artillery) return;
    artillery.suggestedExitCode = 1;
    artillery.globalEvents?.emit("log", {}, `cable: ${overLineMessage(verdict, "artillery run will exit 1")}`);
  }
}
