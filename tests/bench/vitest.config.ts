// vitest settings: the benchmark's smoke test (slow gate only) runs the benchmark against the built packages (dist) in child processes; the gate's files and time limits come from vitest.gate.ts.
import { defineConfig } from "vitest/config";
import { gateFiles } from "../../vitest.gate.js";
import { sourceAliases } from "../../vitest.sources.js";

export default defineConfig({
  resolve: { alias: sourceAliases },
  // The quick bench runs for about two minutes on a 2-core machine.
  test: { ...gateFiles(["test/**/*.test.ts"]), testTimeout: 300_000, hookTimeout: 300_000 },
});
