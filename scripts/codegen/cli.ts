/** `npm run generate` (writes @otc/types' src/generated/) and `npm run check:generated` (fails on drift). */
import { mkdir, readdir, readFile, rm, writeFile } from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { GENERATE_COMMAND, generate } from "./generate.js";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");

/** What differs between the generated files and what is in `outDir`: each path with its reason. */
export async function findDrift(expected: Map<string, string>, outDir: string): Promise<string[]> {
  const present = await readdir(outDir).catch(() => [] as string[]);
  const drift: string[] = [];
  for (const [file, content] of expected) {
    const current = await readFile(path.join(outDir, file), "utf8").catch(() => undefined);
    if (current === undefined) {
      drift.push(`${file}: missing`);
    } else if (current !== content) {
      drift.push(`${file}: differs from what the spec produces`);
    }
  }
  for (const file of present) {
    if (!expected.has(file)) {
      drift.push(`${file}: not produced by the spec any more`);
    }
  }
  return drift.sort();
}

/** Replaces `outDir`'s contents with exactly the generated files. */
export async function writeGenerated(expected: Map<string, string>, outDir: string): Promise<void> {
  await rm(outDir, { recursive: true, force: true });
  await mkdir(outDir, { recursive: true });
  for (const [file, content] of expected) {
    await writeFile(path.join(outDir, file), content);
  }
}

async function main(argv: string[]): Promise<number> {
  const check = argv.includes("--check");
  const specDir = path.join(root, "spec");
  const outDir = path.join(root, "packages/types/src/generated");
  const expected = await generate(specDir);
  const shown = path.relative(process.cwd(), outDir) || ".";
  if (check) {
    const drift = await findDrift(expected, outDir);
    if (drift.length === 0) {
      console.log(`generated code is up to date (${expected.size} files in ${shown})`);
      return 0;
    }
    console.error(`Generated code in ${shown} does not match spec/:`);
    for (const line of drift) {
      console.error(`  ${line}`);
    }
    console.error(`Run \`${GENERATE_COMMAND}\` and commit the result.`);
    return 1;
  }
  await writeGenerated(expected, outDir);
  console.log(`wrote ${expected.size} files to ${shown}`);
  return 0;
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  main(process.argv.slice(2)).then(
    (code) => {
      process.exitCode = code;
    },
    (error: unknown) => {
      console.error(error instanceof Error ? `codegen failed: ${error.message}` : error);
      process.exitCode = 1;
    },
  );
}
