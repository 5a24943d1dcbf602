// The drift check of the demo's generated files: catalog.json and the typed bindings match the demo's tools.
import { readFile } from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { demoGeneratedFiles } from "../scripts/generate-bindings.js";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");

describe("apps/demo generated files", () => {
  it("match what the demo's tools produce (else run `npm run generate` and commit)", async () => {
    for (const [file, content] of await demoGeneratedFiles()) {
      expect(await readFile(path.join(root, file), "utf8"), `${file} is stale: run \`npm run generate\``).toBe(content);
    }
  });
});
