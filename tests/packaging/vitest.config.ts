// vitest settings: packing, installing and type-checking a project takes a while, so hooks and tests get 120 s.
import { defineConfig } from "vitest/config";

export default defineConfig({
  test: { include: ["test/**/*.test.ts"], testTimeout: 120_000, hookTimeout: 120_000 },
});
