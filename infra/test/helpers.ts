/** A CDK context that sets every stack option away from its default, in one region. */
export const EVERY_OPTION_CONTEXT = {
  regions: "ap-southeast-2",
  arch: "arm64",
  cpu: "2048",
  memoryMiB: "4096",
  logRetentionDays: "7",
  resultsExpireDays: "3",
  destroyBucket: "true",
  containerInsights: "true",
  tags: "team=realtime,cost-center=42",
} as const;
