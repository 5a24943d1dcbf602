// vitest settings: `@otc/*` imports resolve to their sources (see vitest.sources.ts at the root); the gate's files and time limits come from vitest.gate.ts.
import { defineConfig } from "vitest/config";
import { GATE_TIMEOUTS, gateFiles } from "../../vitest.gate.js";
import { sourceAliases } from "../../vitest.sources.js";

export default defineConfig({
  resolve: { alias: sourceAliases },
  test: { ...gateFiles(["test/**/*.test.ts"]), ...GATE_TIMEOUTS },
});
