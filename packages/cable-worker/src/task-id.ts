import { randomBytes } from "node:crypto";

/**
 * The task id names the results folder. On Fargate it is the ECS task id (the last segment of the
 * task ARN from the v4 metadata endpoint), so results can be matched to DescribeTasks and logs.
 * Elsewhere, a random id.
 */
export async function discoverTaskId(env: NodeJS.ProcessEnv, fetchFn: typeof fetch = fetch): Promise<string> {
  const metadataUri = env.ECS_CONTAINER_METADATA_URI_V4;
  if (metadataUri) {
    const response = await fetchFn(`${metadataUri}/task`, { signal: AbortSignal.timeout(5_000) });
    if (!response.ok) throw new Error(`ECS task metadata: HTTP ${response.status}`);
    const body = (await response.json()) as { TaskARN?: unknown };
    if (typeof body.TaskARN !== "string" || !body.TaskARN.includes("/")) throw new Error("ECS task metadata has no TaskARN");
    return body.TaskARN.slice(body.TaskARN.lastIndexOf("/") + 1);
  }
  return `local-${randomBytes(6).toString("hex")}`;
}
