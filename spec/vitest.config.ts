// vitest settings: the gate's files and time limits come from vitest.gate.ts.
import { defineConfig } from "vitest/config";
import { GATE_TIMEOUTS, gateFiles } from "../vitest.gate.js";

export default defineConfig({ test: { ...gateFiles(["**/*.test.ts"]), ...GATE_TIMEOUTS } });
