// vitest settings: `@otc/*` resolve to their sources (see vitest.sources.ts at the root), so the tests need no build; they start real redis-servers, so hooks and tests get 20 s.
import { defineConfig } from "vitest/config";
import { sourceAliases } from "../../vitest.sources.js";

export default defineConfig({
  resolve: { alias: sourceAliases },
  test: { include: ["test/**/*.test.ts"], testTimeout: 20_000, hookTimeout: 20_000 },
});
