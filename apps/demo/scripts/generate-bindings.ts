/** Writes the demo's catalog (catalog.json) and its typed bindings (src/generated/tools.ts); `--check` reports drift. */
import { readFile, writeFile } from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { generateBindings } from "@otc/cli";
import { OxpCore } from "@otc/server/core";
import { demoTools } from "../src/tools.js";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");

/** The files this script owns, by path below apps/demo, with the content the catalog gives them. */
export async function demoGeneratedFiles(): Promise<Map<string, string>> {
  const catalog = new OxpCore({ tools: demoTools() }).listTools({ annotations: true });
  return new Map([
    ["catalog.json", `${JSON.stringify(catalog, null, 2)}\n`],
    ["src/generated/tools.ts", await generateBindings(catalog.items, "catalog.json")],
  ]);
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const files = await demoGeneratedFiles();
  if (process.argv.includes("--check")) {
    const stale = [];
    for (const [file, content] of files) {
      if ((await readFile(path.join(root, file), "utf8").catch(() => "")) !== content) {
        stale.push(file);
      }
    }
    if (stale.length > 0) {
      console.error(
        `apps/demo: ${stale.join(", ")} do not match the demo's tools. Run \`npm run generate\` and commit the result.`,
      );
      process.exitCode = 1;
    }
  } else {
    for (const [file, content] of files) {
      await writeFile(path.join(root, file), content);
    }
    console.log(`wrote ${[...files.keys()].join(", ")}`);
  }
}
