// Type-checks every TypeScript sample of this package's README, each as a module of a user's own, against the
// frameworks at the versions this package pins (they resolve from here) and @otc/* from their sources.
import { readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import ts from "typescript";
import { describe, expect, it } from "vitest";

const packageDir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const readme = readFileSync(path.join(packageDir, "README.md"), "utf8");

/** The ```ts blocks of the README, each with the line it starts on. */
const samples = [...readme.matchAll(/```ts\n([\s\S]*?)```/g)].map((match) => ({
  line: readme.slice(0, match.index).split("\n").length,
  code: match[1] ?? "",
}));

/** The package's own compiler options (strict, NodeNext, the `@otc/*` source paths), checking only. */
function compilerOptions(): ts.CompilerOptions {
  const parsed = ts.getParsedCommandLineOfConfigFile(
    path.join(packageDir, "tsconfig.json"),
    {},
    {
      ...ts.sys,
      onUnRecoverableConfigFileDiagnostic: (diagnostic) => {
        throw new Error(ts.flattenDiagnosticMessageText(diagnostic.messageText, "\n"));
      },
    },
  );
  if (!parsed) {
    throw new Error("tsconfig.json could not be read");
  }
  return { ...parsed.options, noEmit: true, lib: ["lib.es2023.d.ts", "lib.dom.d.ts"] };
}

/**
 * Every file but the samples, parsed once for all the programs this file makes (the frameworks' declarations, the
 * `@otc/*` sources, the standard library): each program parses and binds only its samples.
 */
const parsed = new Map<string, ts.SourceFile>();

/**
 * The diagnostics of the samples, each compiled as a file of its own in this package's folder (kept in memory,
 * nothing written), so that its imports resolve as an installed project's would. Only the samples are checked:
 * what they import is type-checked by its own package, and is read here for its types alone.
 */
function diagnose(files: ReadonlyMap<string, string>): string[] {
  const options = compilerOptions();
  const host = ts.createCompilerHost(options);
  const { fileExists, readFile, getSourceFile } = host;
  host.fileExists = (file) => files.has(path.resolve(file)) || fileExists.call(host, file);
  host.readFile = (file) => files.get(path.resolve(file)) ?? readFile.call(host, file);
  host.getSourceFile = (file, languageVersion, onError, shouldCreate) => {
    const text = files.get(path.resolve(file));
    if (text !== undefined) {
      return ts.createSourceFile(file, text, languageVersion, true);
    }
    const key = path.resolve(file);
    let source = parsed.get(key);
    if (!source) {
      source = getSourceFile.call(host, file, languageVersion, onError, shouldCreate);
      if (source) {
        parsed.set(key, source);
      }
    }
    return source;
  };
  const program = ts.createProgram([...files.keys()], options, host);
  const samples = program.getSourceFiles().filter((file) => files.has(path.resolve(file.fileName)));
  // What ts.getPreEmitDiagnostics reports, for the samples alone.
  return [
    ...program.getOptionsDiagnostics(),
    ...program.getGlobalDiagnostics(),
    ...samples.flatMap((file) => [
      ...program.getSyntacticDiagnostics(file),
      ...program.getSemanticDiagnostics(file),
      ...(options.declaration || options.composite ? program.getDeclarationDiagnostics(file) : []),
    ]),
  ]
    .filter((diagnostic) => diagnostic.file === undefined || files.has(path.resolve(diagnostic.file.fileName)))
    .map((diagnostic) => {
      const where = diagnostic.file
        ? `${diagnostic.file.text.split("\n")[0]?.slice(3)}, sample line ${
            diagnostic.file.getLineAndCharacterOfPosition(diagnostic.start ?? 0).line
          }`
        : "";
      return `${where}: ${ts.flattenDiagnosticMessageText(diagnostic.messageText, "\n")}`;
    });
}

const asFiles = (codes: readonly { line: number; code: string }[]) =>
  new Map(
    codes.map(({ line, code }, index) => [
      path.join(packageDir, `readme-sample-${index}.ts`),
      `// README.md:${line}\n${code}\nexport {};\n`,
    ]),
  );

/**
 * The time limit of a test that type-checks: only a guard against a hang, above the gate's. A check reads some 1,300
 * declaration files (the frameworks', Node's, the DOM's) and takes about 15 s of CPU, which took 190 s on two cores
 * busy with 22 runnable processes: nothing in it waits on the clock, and a busier machine only makes it slower.
 */
const TYPE_CHECK_LIMIT_MS = 600_000;

describe("README samples", () => {
  it("show each framework's ten lines, approvals and authorization", () => {
    const imports = samples.map(({ code }) => code).join("\n");
    for (const entry of ["@otc/ai/vercel", "@otc/ai/langchain", "@otc/ai/openai-agents"]) {
      expect(imports).toContain(`from "${entry}"`);
    }
    expect(samples.length).toBeGreaterThanOrEqual(5);
    // LangChain's ten lines are the langchain package's own agent, approvals included, not a loop of our own.
    const langchain = samples.find(({ code }) => code.includes(`from "@otc/ai/langchain"`))?.code ?? "";
    expect(langchain).toContain(`import { createAgent, humanInTheLoopMiddleware } from "langchain";`);
    expect(langchain).toContain("humanInTheLoopMiddleware({ interruptOn: oxpInterruptOn(tools) })");
  });

  it("type-check as written (strict, an ESM module with top-level await)", { timeout: TYPE_CHECK_LIMIT_MS }, () => {
    expect(diagnose(asFiles(samples))).toEqual([]);
  });

  // Cheap after the test above (the declarations are parsed once), as costly as it when run alone.
  it("would fail on a sample that does not compile", { timeout: TYPE_CHECK_LIMIT_MS }, () => {
    const wrong = `import { oxpTools } from "@otc/ai/vercel";\nawait oxpTools("http://127.0.0.1:8080");\n`;
    expect(diagnose(asFiles([{ line: 0, code: wrong }]))).toEqual([
      expect.stringMatching(/sample line 2: .*not assignable to parameter of type 'OxpClient'/),
    ]);
  });
});
