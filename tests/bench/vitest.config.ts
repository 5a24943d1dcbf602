// vitest settings: the smoke test runs the benchmark, which runs against the built packages (dist) in child processes; on a busy 2-core machine it gets 3 minutes.
import { defineConfig } from "vitest/config";
import { sourceAliases } from "../../vitest.sources.js";

export default defineConfig({
  resolve: { alias: sourceAliases },
  test: { include: ["test/**/*.test.ts"], testTimeout: 180_000, hookTimeout: 180_000 },
});
