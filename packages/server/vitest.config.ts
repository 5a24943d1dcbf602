// vitest settings: `@otc/*` resolve to their sources (see vitest.sources.ts at the root), so the tests need no build; the gate's files and time limits come from vitest.gate.ts. The HTTP contract tests run three times: on the Express adapter, the node:http one and the fetch one.
import { defineConfig } from "vitest/config";
import { GATE_TIMEOUTS, gateFiles } from "../../vitest.gate.js";
import { sourceAliases } from "../../vitest.sources.js";

/** Tests of one adapter's own features (Express pages and mounting; node pages), or that name their adapter: run once. */
const ONCE = [
  "test/pages.test.ts",
  "test/logging-and-mounting.test.ts",
  "test/node-handler.test.ts",
  // listen() alone: the adapter makes no difference to it.
  "test/slowloris.slow.test.ts",
  // The fetch handler called in-process: no adapter under test.
  "test/fetch-handler.test.ts",
  "test/entry-points.test.ts",
  // An adapter of its own, over the exported pipeline: none of the three adapters is under test.
  "test/adapter-entry.test.ts",
];

/**
 * Tests of what a fetch host decides itself, below the handler (Node's bridge here; Bun, Deno or workerd in
 * production): raw framing, Host counting, reading a body as it comes. The fetch handler's own share of them
 * runs in test/fetch-handler.test.ts.
 */
const NOT_FETCH = ["test/host-check.test.ts", "test/http-hardening.test.ts", "test/malformed-http.test.ts"];

export default defineConfig({
  resolve: { alias: sourceAliases },
  test: {
    ...GATE_TIMEOUTS,
    // A worker keeps the modules it loaded from one test file to the next: each file would otherwise import the
    // sources again, once per adapter (over 100 s of the server's CPU in the gate). No test here stubs a global or
    // a module, and fake timers are put back after each test.
    isolate: false,
    projects: [
      { extends: true, test: { name: "express", ...gateFiles(["src/**/*.test.ts", "test/**/*.test.ts"]) } },
      {
        extends: true,
        test: { name: "node", ...gateFiles(["test/**/*.test.ts"], ONCE), env: { OXP_TEST_ADAPTER: "node" } },
      },
      {
        extends: true,
        test: {
          name: "fetch",
          ...gateFiles(["test/**/*.test.ts"], [...ONCE, ...NOT_FETCH]),
          env: { OXP_TEST_ADAPTER: "fetch" },
        },
      },
    ],
  },
});
