// vitest settings: `@otc/*` imports resolve to their sources (see vitest.sources.ts at the root); packing, installing and type-checking a project takes a while, so hooks and tests get 120 s.
import { defineConfig } from "vitest/config";
import { sourceAliases } from "../../vitest.sources.js";

export default defineConfig({
  resolve: { alias: sourceAliases },
  test: { include: ["test/**/*.test.ts"], testTimeout: 120_000, hookTimeout: 120_000 },
});
