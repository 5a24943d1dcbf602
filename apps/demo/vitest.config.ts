// vitest settings: `@otc/*` resolve to their sources (see vitest.sources.ts at the root); the gate's files and time limits come from vitest.gate.ts. The demo's HTTP tests run on both adapters.
import { defineConfig } from "vitest/config";
import { GATE_TIMEOUTS, gateFiles } from "../../vitest.gate.js";
import { sourceAliases } from "../../vitest.sources.js";

/** Tests no adapter changes (generated files, a tool run on its own): run once. */
const ONCE = ["test/generated.test.ts", "test/sleep-tool.test.ts"];

export default defineConfig({
  resolve: { alias: sourceAliases },
  test: {
    ...GATE_TIMEOUTS,
    // A worker keeps the modules it loaded from one test file to the next: each file would otherwise import the
    // sources again, once per adapter (over 100 s of the server's CPU in the gate). No test here stubs a global or
    // a module, and fake timers are put back after each test.
    isolate: false,
    projects: [
      { extends: true, test: { name: "express", ...gateFiles(["test/**/*.test.ts"]) } },
      {
        extends: true,
        test: { name: "node", ...gateFiles(["test/**/*.test.ts"], ONCE), env: { OXP_TEST_ADAPTER: "node" } },
      },
    ],
  },
});
