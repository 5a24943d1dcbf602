// bundleWithoutNode: resolves the workspace packages from their sources, and rejects any Node built-in, bare or `node:`, naming who imports it.
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { bundleWithoutNode } from "../src/bundle.js";

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), "otc-bundle-"));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

async function entry(name: string, code: string): Promise<string> {
  const path = join(dir, name);
  await writeFile(path, code);
  return path;
}

describe("bundleWithoutNode", () => {
  it("bundles @otc/* from their sources into one module", async () => {
    const code = await bundleWithoutNode(
      await entry("types.mjs", 'import { OXP_VERSION } from "@otc/types";\nexport const version = OXP_VERSION;\n'),
    );
    expect(code).not.toMatch(/from\s*["']@otc\//);
    expect(code).toContain("OXP_VERSION");
  });

  it.each([
    ["node:os", 'import { hostname } from "node:os";\nexport default hostname;\n'],
    ["fs/promises", 'import { readFile } from "fs/promises";\nexport default readFile;\n'],
    ["string_decoder", 'import { StringDecoder } from "string_decoder";\nexport default StringDecoder;\n'],
  ])("rejects an entry that imports %s, naming it and its importer", async (builtin, code) => {
    const path = await entry(`${builtin.replace(/\W/g, "-")}.mjs`, code);
    await expect(bundleWithoutNode(path)).rejects.toThrow(`${builtin} (from ${path})`);
  });
});
