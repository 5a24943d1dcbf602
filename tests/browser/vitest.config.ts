// vitest settings: `@otc/*` imports resolve to their sources (see vitest.sources.ts at the root); the tests start real servers, so hooks and tests get 20 s.
import { defineConfig } from "vitest/config";
import { sourceAliases } from "../../vitest.sources.js";

export default defineConfig({
  resolve: { alias: sourceAliases },
  test: { include: ["test/**/*.test.ts"], testTimeout: 20_000, hookTimeout: 20_000 },
});
