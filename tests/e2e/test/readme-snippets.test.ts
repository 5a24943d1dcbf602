// Type-checks every TypeScript snippet of every README, as a user would paste it into a module of their own.
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import ts from "typescript";
import { afterAll, describe, expect, it } from "vitest";

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, "../../..");
/** Inside the e2e package, so the snippets resolve `@otc/*` as an installed project would. */
const work = path.join(here, "../.snippets");

const READMES = [
  "README.md",
  "packages/types/README.md",
  "packages/server/README.md",
  "packages/client/README.md",
  "packages/cli/README.md",
  "packages/conformance/README.md",
  "apps/demo/README.md",
  "packages/mcp/README.md",
  "packages/redis/README.md",
  "packages/postgres/README.md",
  "packages/inspector/README.md",
];

/** The ```ts blocks of a Markdown file, with the line each starts on. */
function snippets(file: string): { line: number; code: string }[] {
  let text: string;
  try {
    text = readFileSync(path.join(root, file), "utf8");
  } catch {
    return [];
  }
  const found: { line: number; code: string }[] = [];
  for (const match of text.matchAll(/```ts\n([\s\S]*?)```/g)) {
    found.push({ line: text.slice(0, match.index).split("\n").length, code: match[1] ?? "" });
  }
  return found;
}

const cases = READMES.flatMap((file) => snippets(file).map(({ line, code }) => ({ name: `${file}:${line}`, code })));

afterAll(() => rmSync(work, { recursive: true, force: true }));

describe("README snippets", () => {
  it("were found", () => {
    expect(cases.length).toBeGreaterThan(5);
  });

  it("type-check as written (strict, in an ESM module with top-level await)", () => {
    rmSync(work, { recursive: true, force: true });
    mkdirSync(work, { recursive: true });
    // The bindings snippet imports `./tools.js`, the file `otc codegen` writes: the demo's stands in for it.
    writeFileSync(
      path.join(work, "tools.ts"),
      readFileSync(path.join(root, "apps/demo/src/generated/tools.ts"), "utf8"),
    );
    const files = cases.map(({ name, code }, index) => {
      const file = path.join(work, `snippet-${index}.ts`);
      writeFileSync(file, `// ${name}\n${code}\nexport {};\n`);
      return file;
    });
    const program = ts.createProgram(files, {
      target: ts.ScriptTarget.ES2022,
      lib: ["lib.es2023.d.ts", "lib.dom.d.ts"],
      module: ts.ModuleKind.NodeNext,
      moduleResolution: ts.ModuleResolutionKind.NodeNext,
      types: ["node"],
      strict: true,
      noUncheckedIndexedAccess: true,
      skipLibCheck: true,
      noEmit: true,
    });
    const problems = ts
      .getPreEmitDiagnostics(program)
      .filter((diagnostic) => diagnostic.file === undefined || files.includes(path.resolve(diagnostic.file.fileName)))
      .map((diagnostic) => {
        const where = diagnostic.file
          ? `${readFileSync(diagnostic.file.fileName, "utf8").split("\n")[0]?.slice(3)} (snippet line ${
              diagnostic.file.getLineAndCharacterOfPosition(diagnostic.start ?? 0).line
            })`
          : "";
        return `${where}: ${ts.flattenDiagnosticMessageText(diagnostic.messageText, "\n")}`;
      });
    expect(problems).toEqual([]);
  });
});
