import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["packages/*/test/**/*.test.ts", "packages/*/src/**/*.test.ts", "infra/test/**/*.test.ts", "test/**/*.test.ts"],
    exclude: ["**/node_modules/**", "**/dist/**"],
    // Integration tests start real servers and the real Artillery CLI; the 2-core CI machine is slow.
    testTimeout: 60_000,
    hookTimeout: 120_000,
    pool: "forks",
  },
});
