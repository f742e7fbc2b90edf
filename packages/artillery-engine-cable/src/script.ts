/** A scenario whose steps the engine may run: a scenario, or a `before`/`after` hook. */
export interface FlowOwner {
  engine?: string;
  name?: string;
  flow?: unknown;
  [field: string]: unknown;
}

/** The script as Artillery hands it to an engine; declared once for the engine, the preflight and the flow checks. */
export interface Script {
  config: Record<string, any>;
  scenarios?: FlowOwner[];
  before?: FlowOwner;
  after?: FlowOwner;
  /** Set by Artillery (util.ts readScript/resolveConfigPath): the files the script came from. */
  _scriptPath?: string;
  _configPath?: string;
  /** Set by Artillery: `--environment`, whose `config.environments` section was merged into `config`. */
  _environment?: string;
}
