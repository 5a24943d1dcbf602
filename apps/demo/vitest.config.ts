// vitest settings: `@otc/*` resolve to their sources (see vitest.sources.ts at the root); the tests start real servers, so hooks and tests get 20 s. The demo's HTTP tests run on both adapters.
import { defineConfig } from "vitest/config";
import { sourceAliases } from "../../vitest.sources.js";

/** Tests no adapter changes (generated files, a tool run on its own): run once. */
const ONCE = ["test/generated.test.ts", "test/sleep-tool.test.ts"];

export default defineConfig({
  resolve: { alias: sourceAliases },
  test: {
    testTimeout: 20_000,
    hookTimeout: 20_000,
    projects: [
      { extends: true, test: { name: "express", include: ["test/**/*.test.ts"] } },
      {
        extends: true,
        test: { name: "node", include: ["test/**/*.test.ts"], exclude: ONCE, env: { OXP_TEST_ADAPTER: "node" } },
      },
    ],
  },
});
