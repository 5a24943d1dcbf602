// vitest settings: `@otc/*` imports resolve to their sources (see vitest.sources.ts at the root).
import { defineConfig } from "vitest/config";
import { sourceAliases } from "../../vitest.sources.js";

export default defineConfig({
  resolve: { alias: sourceAliases },
  test: { include: ["test/**/*.test.ts"] },
});
