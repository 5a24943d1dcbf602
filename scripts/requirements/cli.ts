/** `npm run generate` writes docs/requirements.json from docs/protocol.md; `--check` fails when it is stale. */
import { readFile, writeFile } from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { manifestJson, parseRequirements } from "./requirements.js";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const manifest = path.join(root, "docs/requirements.json");

const expected = manifestJson(parseRequirements(await readFile(path.join(root, "docs/protocol.md"), "utf8")));
if (process.argv.includes("--check")) {
  const current = await readFile(manifest, "utf8").catch(() => "");
  if (current !== expected) {
    console.error("docs/requirements.json differs from docs/protocol.md: run `npm run generate` and commit it.");
    process.exitCode = 1;
  }
} else {
  await writeFile(manifest, expected);
}
