// vitest settings: `@otc/*` resolve to their sources (see vitest.sources.ts at the root), so the tests need no build.
import { defineConfig } from "vitest/config";
import { sourceAliases } from "../../vitest.sources.js";

export default defineConfig({ resolve: { alias: sourceAliases } });
