// The server's modules stay small enough for a newcomer to find their way (ARCHITECTURE.md): no source file of
// packages/server/src over 600 lines, the core's facade under 400, each validator provider under 150.
import { readdirSync, readFileSync } from "node:fs";
import { join, relative } from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";

const root = fileURLToPath(new URL("..", import.meta.url));
const source = join(root, "packages/server/src");

/** Each source file under `dir` (tests left out), relative to the repository's root. */
function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) {
      return sources(path);
    }
    return entry.name.endsWith(".ts") && !entry.name.endsWith(".test.ts") ? [relative(root, path)] : [];
  });
}

const lines = (file: string) => readFileSync(join(root, file), "utf8").split("\n").length - 1;

/** The bounds a file is held to: the tighter of its own and the package's. */
const BOUNDS: Record<string, number> = {
  "packages/server/src/core/oxp-core.ts": 399,
  "packages/server/src/core/validation/ajv.ts": 149,
  "packages/server/src/core/validation/cfworker.ts": 149,
  "packages/server/src/core/validation/standard-schema.ts": 149,
};
const MOST = 600;

describe("packages/server/src module sizes", () => {
  const files = sources(source);

  it("finds the modules it bounds", () => {
    for (const file of Object.keys(BOUNDS)) {
      expect(files).toContain(file);
    }
  });

  it("keeps every module within its bound", () => {
    const over = files
      .map((file) => ({ file, lines: lines(file), most: BOUNDS[file] ?? MOST }))
      .filter(({ lines: count, most }) => count > most)
      .map(({ file, lines: count, most }) => `${file}: ${count} lines (at most ${most})`);
    expect(over).toEqual([]);
  });
});
