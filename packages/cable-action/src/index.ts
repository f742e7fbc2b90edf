export { downloadBaseline, type BaselineQuery, type BaselineResult } from "./baseline.js";
export { createClient, GitHubApiError, type ClientOptions, type GitHub } from "./client.js";
export { markerOf, upsertComment, MAX_BODY, type CommentResult, type StickyComment } from "./comment.js";
export { ContextError, readRunnerContext, workflowFileOf, type RunnerContext } from "./context.js";
export { main, EXIT } from "./cli.js";
