// `otc codegen` against hostile catalogs, served by real servers on loopback: the bindings declare types and nothing else.
import { execFile } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { verifies } from "@otc/test-helpers/verifies";
import type { ToolDefinition } from "@otc/types";
import { compile } from "json-schema-to-typescript";
import ts from "typescript";
import { afterAll, beforeAll, beforeEach, describe, expect, it, onTestFinished } from "vitest";
import { run } from "./cli.js";
import { CatalogError, generateBindings, MAX_BINDINGS_BYTES, NO_REFERENCES } from "./codegen.js";
import { EXIT } from "./io.js";

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../..");

/** What no generated file holds raw: controls (but line feed), line and paragraph separators, bidirectional overrides. */
// biome-ignore lint/suspicious/noControlCharactersInRegex: these are the characters the tests look for
const UNSAFE = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/;

/** A server on 127.0.0.1 that answers every request with `answer(path)` as JSON and records every request's path. */
async function serve(answer: (path: string) => unknown): Promise<{ url: string; paths: string[]; server: Server }> {
  const paths: string[] = [];
  const server = createServer((req, res) => {
    paths.push(req.url ?? "");
    res.writeHead(200, { "Content-Type": "application/json" });
    res.end(JSON.stringify(answer(req.url ?? "")));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, paths, server };
}

/** Runs `otc` in process; resolves with its exit code and what it printed. */
async function otc(args: string[]) {
  let stdout = "";
  let stderr = "";
  const code = await run(args, {
    stdout: (text) => {
      stdout += text;
    },
    stderr: (text) => {
      stderr += text;
    },
    env: {},
  });
  return { code, stdout, stderr };
}

const definition = (id: string, input_schema: object, output_schema: object | null = null): ToolDefinition =>
  ({
    id,
    name: id.split("@")[0]?.replace(".", "_") ?? "",
    description: `The ${id} tool.`,
    version: id.split("@")[1] ?? "",
    input_schema,
    output_schema,
  }) as ToolDefinition;

/** The project's fixed helpers, exactly as every generated file holds them: nothing in them comes from a catalog. */
const HELPERS: Record<string, string> = {
  createTools:
    "export function createTools(client: OxpClient): BoundTools<Tools> {\n  return bindTools<Tools>(client, toolIds);\n}",
  createAsyncTools:
    "export function createAsyncTools(client: OxpClient): BoundAsyncTools<Tools> {\n  return bindAsyncTools<Tools>(client, toolIds);\n}",
};

/**
 * What a generated file is made of, read by TypeScript's parser: every top-level statement must be the import of
 * `@otc/client`, an exported type or interface, `toolIds`, `createTools` or `createAsyncTools` exactly as the
 * generator writes them; nowhere an `import(...)` (expression or type). Returns the exported names; throws on
 * anything else.
 */
function exportsOf(code: string): string[] {
  const file = ts.createSourceFile("tools.ts", code, ts.ScriptTarget.ES2022, true, ts.ScriptKind.TS);
  const names: string[] = [];
  const exported = (node: ts.Node) =>
    ts.canHaveModifiers(node) && (ts.getModifiers(node) ?? []).some((m) => m.kind === ts.SyntaxKind.ExportKeyword);
  for (const statement of file.statements) {
    const text = statement.getText(file);
    if (ts.isImportDeclaration(statement)) {
      expect(text).toBe(
        'import { type BoundAsyncTools, type BoundTools, bindAsyncTools, bindTools, type OxpClient } from "@otc/client";',
      );
    } else if ((ts.isInterfaceDeclaration(statement) || ts.isTypeAliasDeclaration(statement)) && exported(statement)) {
      names.push(statement.name.text);
    } else if (ts.isVariableStatement(statement) && exported(statement)) {
      expect(text).toMatch(/^export const toolIds = \[[\s"\w.@,]*\] as const;$/);
      names.push("toolIds");
    } else if (ts.isFunctionDeclaration(statement) && exported(statement)) {
      const name = statement.name?.text ?? "";
      expect(Object.hasOwn(HELPERS, name), name).toBe(true);
      expect(text).toBe(HELPERS[name]);
      names.push(name);
    } else {
      throw new Error(`the bindings hold a statement no catalog may add: ${text.slice(0, 200)}`);
    }
  }
  const visit = (node: ts.Node): void => {
    if (
      ts.isImportTypeNode(node) ||
      (ts.isCallExpression(node) && node.expression.kind === ts.SyntaxKind.ImportKeyword)
    ) {
      throw new Error(`the bindings import something: ${node.getText(file)}`);
    }
    ts.forEachChild(node, visit);
  };
  visit(file);
  return names;
}

/**
 * Every comment of a generated file, as TypeScript's scanner sees them: a block comment holds no `*\/` but its
 * own end, and no comment holds a line terminator other than `\n` (a `//` comment none), a control character
 * or a bidirectional override.
 */
function commentsOf(code: string): string[] {
  const scanner = ts.createScanner(ts.ScriptTarget.ES2022, false, ts.LanguageVariant.Standard, code);
  const comments: string[] = [];
  for (let kind = scanner.scan(); kind !== ts.SyntaxKind.EndOfFileToken; kind = scanner.scan()) {
    if (kind === ts.SyntaxKind.SingleLineCommentTrivia || kind === ts.SyntaxKind.MultiLineCommentTrivia) {
      comments.push(scanner.getTokenText());
    }
  }
  for (const comment of comments) {
    if (comment.startsWith("/*")) {
      expect(comment.indexOf("*/"), comment).toBe(comment.length - 2);
    } else {
      expect(comment, comment).not.toMatch(/\n/);
    }
    expect(comment, comment).not.toMatch(UNSAFE);
  }
  return comments;
}

/** `--strict` and more, with @otc/client resolved to its sources: how the generated files are checked. */
const strictOptions: ts.CompilerOptions = {
  strict: true,
  noEmit: true,
  module: ts.ModuleKind.ESNext,
  moduleResolution: ts.ModuleResolutionKind.Bundler,
  target: ts.ScriptTarget.ES2022,
  noUncheckedIndexedAccess: true,
  exactOptionalPropertyTypes: true,
  noUnusedLocals: true,
  skipLibCheck: true,
  types: [],
  paths: {
    "@otc/client": [path.join(repoRoot, "packages/client/src/index.ts")],
    "@otc/types": [path.join(repoRoot, "packages/types/src/index.ts")],
  },
};

/**
 * Every file the checks read but the generated ones (the standard library, @otc/client's and @otc/types' sources),
 * parsed once for all the programs and language services of this file: each parses and binds only its own file.
 */
const parsed = new Map<string, ts.SourceFile>();
const documents = ts.createDocumentRegistry();
/** How many deprecation checks ran: the version of each one's file in {@link documents}. */
let checks = 0;

/** Type-checks a generated file with `--strict` and more, against @otc/client's sources; resolves with the errors. */
function typeErrors(code: string, dir: string): string[] {
  const file = path.join(dir, "typecheck.ts");
  const host = ts.createCompilerHost({});
  const { readFile, fileExists, getSourceFile } = host;
  // The file exists only in memory: nothing is written where another program could pick it up.
  host.readFile = (name) => (path.resolve(name) === file ? code : readFile(name));
  host.fileExists = (name) => path.resolve(name) === file || fileExists(name);
  host.getSourceFile = (name, languageVersion, onError, shouldCreate) => {
    const key = path.resolve(name);
    if (key === file) {
      return getSourceFile.call(host, name, languageVersion, onError, shouldCreate);
    }
    let source = parsed.get(key);
    if (!source) {
      source = getSourceFile.call(host, name, languageVersion, onError, shouldCreate);
      if (source) {
        parsed.set(key, source);
      }
    }
    return source;
  };
  const program = ts.createProgram({ rootNames: [file], host, options: strictOptions });
  const source = program.getSourceFile(file);
  return [...program.getSyntacticDiagnostics(source), ...program.getSemanticDiagnostics(source)].map((d) =>
    ts.flattenDiagnosticMessageText(d.messageText, "\n"),
  );
}

/**
 * What an editor strikes through as deprecated (TypeScript's suggestion 6385) where code uses the bindings:
 * `tools[id]` and `asyncTools[id]` for each id of `ids`, through `createTools` and `BoundTools`, and
 * `createAsyncTools` and `BoundAsyncTools`. Resolves with the accesses it reports (`tools["Toolkit.Tool@x.y.z"]`).
 */
function deprecatedBindings(code: string, ids: readonly string[], dir: string): string[] {
  const file = path.join(dir, "deprecations.ts");
  const uses = ids.flatMap((id) => [`tools[${JSON.stringify(id)}]`, `asyncTools[${JSON.stringify(id)}]`]);
  const text = `${code}\nexport function use(client: OxpClient) {\n  const tools = createTools(client);\n  const asyncTools = createAsyncTools(client);\n  return [${uses.join(", ")}];\n}\n`;
  const read = (name: string) => (path.resolve(name) === file ? text : ts.sys.readFile(name));
  const service = ts.createLanguageService(
    {
      getScriptFileNames: () => [file],
      // The shared registry keeps a document by its version: each check's file is a version of its own.
      getScriptVersion: (name) => (path.resolve(name) === file ? String(++checks) : "1"),
      getScriptSnapshot: (name) => {
        const content = read(name);
        return content === undefined ? undefined : ts.ScriptSnapshot.fromString(content);
      },
      getCurrentDirectory: () => dir,
      getCompilationSettings: () => strictOptions,
      getDefaultLibFileName: (options) => ts.getDefaultLibFilePath(options),
      fileExists: (name) => path.resolve(name) === file || ts.sys.fileExists(name),
      readFile: read,
    },
    documents,
  );
  return service
    .getSuggestionDiagnostics(file)
    .filter((diagnostic) => diagnostic.code === 6385)
    .map((diagnostic) => {
      const start = diagnostic.start ?? 0;
      const binding = /(\w+)\[$/.exec(text.slice(0, start))?.[1];
      return `${binding}[${text.slice(start, start + (diagnostic.length ?? 0))}]`;
    });
}

/** Imports a generated file in a child process (transpiled, with a stand-in @otc/client); resolves with its exit code. */
async function importInChild(code: string, dir: string): Promise<{ code: number; output: string }> {
  const js = ts.transpileModule(code, {
    compilerOptions: { module: ts.ModuleKind.ESNext, target: ts.ScriptTarget.ES2022, verbatimModuleSyntax: true },
  }).outputText;
  const client = path.join(dir, "node_modules/@otc/client");
  await mkdir(client, { recursive: true });
  await writeFile(
    path.join(client, "package.json"),
    JSON.stringify({ name: "@otc/client", type: "module", exports: "./index.js" }),
  );
  await writeFile(
    path.join(client, "index.js"),
    "export const bindTools = () => ({});\nexport const bindAsyncTools = () => ({});\n",
  );
  await writeFile(path.join(dir, "tools.mjs"), js);
  return new Promise((resolve) => {
    const child = execFile(process.execPath, ["tools.mjs"], { cwd: dir }, (error, stdout, stderr) => {
      resolve({ code: error ? Number((error as { code?: number }).code ?? 1) : 0, output: `${stdout}${stderr}` });
    });
    // No time limit but the test's, a guard against a hang: a child that outlives its test is killed.
    onTestFinished(() => {
      child.kill("SIGKILL");
    });
  });
}

let hostile: Awaited<ReturnType<typeof serve>>;
/** Another host a catalog may point a `$ref` at: it must never be asked anything. */
let elsewhere: Awaited<ReturnType<typeof serve>>;
let catalog: ToolDefinition[] = [];
let tmp: string;

beforeAll(async () => {
  [hostile, elsewhere, tmp] = await Promise.all([
    serve((url) => (url.startsWith("/tools") ? { items: catalog } : {})),
    serve(() => ({ type: "number", description: "A schema from another host." })),
    mkdtemp(path.join(os.tmpdir(), "otc-codegen-hostile-")),
  ]);
});
afterAll(async () => {
  await Promise.all([
    ...[hostile, elsewhere].map((s) => s && new Promise((resolve) => s.server.close(resolve))),
    tmp && rm(tmp, { recursive: true, force: true }),
  ]);
});
beforeEach(() => {
  hostile.paths.length = 0;
  elsewhere.paths.length = 0;
});

describe("otc codegen --from a hostile server", () => {
  verifies(
    ["definitions.client-codegen-safe", "definitions.no-codegen-extensions"],
    "writes only types from a schema with generator extensions and a pattern that closes its comment",
    async () => {
      const marker = path.join(tmp, "pwned");
      const pwned = `${hostile.url}/pwned`;
      catalog = [
        definition(
          "Evil.Inject@1.0.0",
          {
            type: "object",
            properties: {
              a: {
                type: "string",
                description: "A.",
                // What json-schema-to-typescript copies into the output word for word.
                tsType: `string; }\nimport("node:fs").then((fs) => fs.writeFileSync(${JSON.stringify(marker)}, "1"));\nfetch("${pwned}/tsType");\nexport interface Dummy {\n  x?: string`,
              },
              b: { type: "string", description: "B.", enum: ["x", "y"], tsEnumNames: ["X", "Y"] },
              c: { type: "object", description: "C.", extends: { tsType: `unknown; fetch("${pwned}/extends")` } },
            },
          },
          // The generator escapes only the first `*/` of a pattern it writes into a comment.
          {
            type: "object",
            patternProperties: { [`x*/ */ } fetch("${pwned}/pattern"); export interface Q { /*`]: {} },
          },
        ),
      ];
      const out = path.join(tmp, "inject.ts");
      expect(await otc(["codegen", "--from", hostile.url, "--out", out])).toMatchObject({ code: EXIT.ok });
      const code = await readFile(out, "utf8");
      expect(exportsOf(code)).toEqual([
        "EvilInjectV1_0_0Input",
        "EvilInjectV1_0_0Output",
        "Tools",
        "toolIds",
        "createTools",
        "createAsyncTools",
      ]);
      commentsOf(code);
      expect(code).toContain("  a?: string;\n");
      expect(code).toContain('  b?: "x" | "y";\n');
      expect(typeErrors(code, tmp)).toEqual([]);
      const imported = await importInChild(code, path.join(tmp, "child"));
      expect(imported, imported.output).toMatchObject({ code: 0 });
      expect(existsSync(marker)).toBe(false);
      // Discovery (this server answers it with no DiscoveryDocument: an OXP 1.0 list follows), then the list.
      expect(hostile.paths).toEqual(["/.well-known/oxp", "/tools"]);
    },
  );

  verifies(
    "definitions.client-codegen-safe",
    "keeps hostile property names, enum values and descriptions inside their keys, strings and comments",
    async () => {
      const names = [
        '"; } fetch("x"); //',
        "back\\slash",
        "*/ end",
        "new\nline",
        "sep\u2028arator\u2029",
        "__proto__",
        "constructor",
        "bidi\u202eevil",
      ];
      const values = ['"*/ \u2028 x', 'a\\"b', "\r\n", "*/\u2029/*"];
      const text = "Ends */ a comment /* and\r\nlines\rin\u2028every\u2029way \u202e\u001b[31m with controls.";
      catalog = [
        {
          ...definition("Evil.Text@1.0.0", {
            type: "object",
            properties: Object.fromEntries(names.map((name) => [name, { type: "string", description: text }])),
            required: ["__proto__"],
          }),
          description: `${text} More.`,
        },
        definition("Evil.Values@1.0.0", {
          type: "object",
          properties: { v: { description: text, enum: [...values, { "*/": "\u2028", ["__proto__"]: 1 }] } },
        }),
      ];
      const out = path.join(tmp, "text.ts");
      expect(await otc(["codegen", "--from", hostile.url, "--out", out])).toMatchObject({ code: EXIT.ok });
      const code = await readFile(out, "utf8");
      expect(exportsOf(code)).toEqual([
        "EvilTextV1_0_0Input",
        "EvilTextV1_0_0Output",
        "EvilValuesV1_0_0Input",
        "EvilValuesV1_0_0Output",
        "Tools",
        "toolIds",
        "createTools",
        "createAsyncTools",
      ]);
      const comments = commentsOf(code);
      // What JSON.stringify leaves raw in a quoted key or a string literal is escaped there too.
      expect(code).not.toMatch(UNSAFE);
      expect(comments).toContain("// Evil.Text@1.0.0: Ends */ a comment /* and");
      expect(comments.filter((comment) => comment.includes("Ends *\\/ a comment /\\* and\n"))).toHaveLength(
        names.length + 1,
      );
      expect(typeErrors(code, tmp)).toEqual([]);
      // The names and values are what the catalog says, as TypeScript reads them.
      const file = ts.createSourceFile("tools.ts", code, ts.ScriptTarget.ES2022, true, ts.ScriptKind.TS);
      const declaration = (name: string) =>
        file.statements.find((s) => ts.isInterfaceDeclaration(s) && s.name.text === name) as ts.InterfaceDeclaration;
      const keys = declaration("EvilTextV1_0_0Input").members.map((member) =>
        member.name && (ts.isStringLiteral(member.name) || ts.isIdentifier(member.name)) ? member.name.text : "?",
      );
      expect(keys).toEqual(names);
      const property = declaration("EvilValuesV1_0_0Input").members[0] as ts.PropertySignature;
      const union = property.type as ts.UnionTypeNode;
      const literals = union.types
        .filter((type): type is ts.LiteralTypeNode => ts.isLiteralTypeNode(type))
        .map((type) => (type.literal as ts.StringLiteral).text);
      expect(literals).toEqual(values);
    },
  );

  verifies(
    "definitions.client-codegen-safe",
    "keeps hostile titles and deprecation messages inside doc comments, and lets them add no tag",
    async () => {
      const text =
        "Ends */ a comment /* and\r\nlines\rin\u2028every\u2029way \u202e\u001b[31m\twith controls @deprecated {@link https://evil.example} @example fetch()";
      catalog = [
        {
          ...definition("Evil.Old@1.0.0", {}),
          annotations: { title: text, read_only: true },
          deprecation_message: `Use Evil.New@2.0.0. ${text}`,
        },
        { ...definition("Evil.New@2.0.0", {}), annotations: { title: `@deprecated ${text}`, open_world: false } },
      ];
      const out = path.join(tmp, "annotations.ts");
      expect(await otc(["codegen", "--from", hostile.url, "--out", out])).toMatchObject({ code: EXIT.ok });
      const code = await readFile(out, "utf8");
      expect(exportsOf(code)).toEqual([
        "EvilNewV2_0_0Input",
        "EvilNewV2_0_0Output",
        "EvilOldV1_0_0Input",
        "EvilOldV1_0_0Output",
        "Tools",
        "toolIds",
        "createTools",
        "createAsyncTools",
      ]);
      const comments = commentsOf(code);
      expect(code).not.toMatch(UNSAFE);
      expect(code).not.toContain("{@");
      expect(comments).toContain(
        "/**\n" +
          "   * Title: \\@deprecated Ends *\\/ a comment /\\* and lines in every way [31m with controls \\@deprecated {\\@link https://evil.example} \\@example fetch()\n" +
          "   * Hints, not guarantees: not open-world.\n" +
          "   */",
      );
      expect(typeErrors(code, tmp)).toEqual([]);
      // The tags as TypeScript reads them: one @deprecated, the catalog's, on the one deprecated tool.
      const file = ts.createSourceFile("tools.ts", code, ts.ScriptTarget.ES2022, true, ts.ScriptKind.TS);
      const tools = file.statements.find(
        (statement) => ts.isInterfaceDeclaration(statement) && statement.name.text === "Tools",
      ) as ts.InterfaceDeclaration;
      const tags = tools.members.map((member) => [
        (member.name as ts.StringLiteral).text,
        ts.getJSDocTags(member).map((tag) => [tag.tagName.text, ts.getTextOfJSDocComment(tag.comment)?.slice(0, 18)]),
      ]);
      expect(tags).toEqual([
        ["Evil.New@2.0.0", []],
        ["Evil.Old@1.0.0", [["deprecated", "Use Evil.New@2.0.0"]]],
      ]);
      expect(deprecatedBindings(code, ["Evil.New@2.0.0", "Evil.Old@1.0.0"], tmp)).toEqual([
        'tools["Evil.Old@1.0.0"]',
        'asyncTools["Evil.Old@1.0.0"]',
      ]);
    },
  );

  verifies.each([
    ["a path", (secrets: string) => ({ type: "array", items: { $ref: secrets } }), "/properties/a/items/$ref"],
    ["a file: URL", (secrets: string) => ({ anyOf: [{ $ref: `file://${secrets}` }] }), "/properties/a/anyOf/0/$ref"],
    ["an http URL", () => ({ not: { $ref: `${elsewhere.url}/schema.json` } }), "/properties/a/not/$ref"],
    ["an enum's data", (secrets: string) => ({ enum: [{ $ref: secrets }] }), "/properties/a/enum/0/$ref"],
    [
      "a default",
      () => ({ type: "string", default: { $ref: `${elsewhere.url}/default` } }),
      "/properties/a/default/$ref",
    ],
    ["a pointer", () => ({ items: { $ref: "#/properties/b" } }), "/properties/a/items/$ref"],
  ])(
    ["definitions.client-codegen-safe", "definitions.self-contained"],
    "refuses a nested $ref to %s, naming the tool and the place, and follows none",
    async (_case, schema, at) => {
      const secret = "API_KEY=sk-live-0d4c8e1f";
      const secrets = path.join(tmp, "secrets.json");
      await writeFile(secrets, JSON.stringify({ type: "string", description: secret }));
      catalog = [
        definition("Evil.Ref@1.0.0", {
          type: "object",
          properties: { a: { description: "A.", ...schema(secrets) }, b: { type: "string", description: "B." } },
        }),
      ];
      const out = path.join(tmp, "ref.ts");
      await rm(out, { force: true });
      const result = await otc(["codegen", "--from", hostile.url, "--out", out]);
      expect(result).toMatchObject({ code: EXIT.protocol, stdout: "" });
      expect(result.stderr).toBe(
        `otc: tool "Evil.Ref@1.0.0" is refused: input_schema has $ref at ${JSON.stringify(at)} (otc codegen follows no reference: a tool's schemas are self-contained)\n`,
      );
      expect(existsSync(out)).toBe(false);
      expect(elsewhere.paths).toEqual([]);
    },
  );

  verifies(
    "definitions.client-codegen-safe",
    "gives json-schema-to-typescript no way to read a file or fetch a URL, should a $ref get past the walk",
    async () => {
      const secrets = path.join(tmp, "secrets.json");
      await writeFile(secrets, JSON.stringify({ type: "string", description: "API_KEY=sk-live-0d4c8e1f" }));
      for (const $ref of [secrets, `file://${secrets}`, "secrets.json", `${elsewhere.url}/schema.json`, "#/$defs/a"]) {
        const schema = { type: "object", properties: { a: { $ref } }, $defs: { a: { type: "string" } } } as const;
        await expect(compile(schema, "X", { $refOptions: NO_REFERENCES, cwd: tmp }), $ref).rejects.toThrow(
          /Refs should have been resolved/,
        );
      }
      expect(elsewhere.paths).toEqual([]);
    },
  );
});

describe("otc codegen --from a server whose arrays are bounded", () => {
  /** `depth` arrays around `item`, each with `bounds` (minItems, maxItems). */
  const bounded = (item: object, depth: number, bounds: object): object =>
    depth === 0 ? item : { type: "array", items: bounded(item, depth - 1, bounds), ...bounds };

  verifies(
    "definitions.client-codegen-safe",
    "writes bindings about the size of the catalog for arrays bounded to 20 or 200 items, nested three deep",
    async () => {
      // 20 items wrote 210 copies of the item (a union of 21 tuples): 29 KB of such a catalog gave 7.5 MB in 7 s.
      const fields = Object.fromEntries(
        Array.from({ length: 40 }, (_, i) => [`f${i}`, { type: "string", description: `Field ${i}.` }]),
      );
      const item = { type: "object", properties: fields, required: Object.keys(fields) };
      const cases: [string, object][] = [
        ["Hostile.Twenty@1.0.0", { maxItems: 20 }],
        ["Hostile.Range@1.0.0", { minItems: 1, maxItems: 20 }],
        ["Hostile.AtLeast@1.0.0", { minItems: 20 }],
        ["Hostile.Many@1.0.0", { minItems: 0, maxItems: 200 }],
      ];
      catalog = cases.map(([id, bounds]) =>
        definition(id, {
          type: "object",
          properties: { list: { ...bounded(item, 3, bounds), description: "Lists of lists." } },
          required: ["list"],
        }),
      );
      const out = path.join(tmp, "bounded.ts");
      expect(await otc(["codegen", "--from", hostile.url, "--out", out])).toMatchObject({ code: EXIT.ok, stderr: "" });
      const code = await readFile(out, "utf8");
      // Types, comments and the fixed text: less than twice the catalog (it was 200 times).
      expect(code.length).toBeLessThan(2 * JSON.stringify({ items: catalog }).length);
      // The item written once per list, `{ f0: string; ... }[][][]`, and twice for 1 to 20 items, `[T, ...T[]]`.
      expect(code.match(/^ {2}}\[\]\[\]\[\];$/gm)).toHaveLength(3);
      expect(code.match(/^ +f0: string;$/gm)).toHaveLength(5);
      expect(typeErrors(code, tmp)).toEqual([]);
    },
  );
});

describe("a catalog file otc codegen refuses", () => {
  /** Writes a catalog file and runs codegen on it; resolves with what `otc` said and whether the output exists. */
  async function fromFile(tools: unknown[]) {
    const from = path.join(tmp, "catalog.json");
    const out = path.join(tmp, "refused.ts");
    await rm(out, { force: true });
    await writeFile(from, JSON.stringify({ items: tools }));
    const result = await otc(["codegen", "--from", from, "--out", out]);
    return { ...result, written: existsSync(out) };
  }

  const nested = (depth: number): object =>
    depth === 0 ? { type: "string" } : { type: "array", items: nested(depth - 1) };

  verifies.each<[string, unknown, RegExp]>([
    [
      "a minItems that closes its comment",
      definition("Evil.Count@1.0.0", {
        type: "object",
        properties: {
          d: { type: "array", description: "D.", items: {}, minItems: '0 */ }; fetch("http://127.0.0.1:9"); /*' },
        },
      }),
      /^otc: tool "Evil.Count@1.0.0" is refused: input_schema has a minItems that is not a non-negative integer at "\/properties\/d\/minItems"\n$/,
    ],
    [
      "a type that is no JSON Schema type",
      definition("Evil.Type@1.0.0", { type: "object", properties: { t: { type: "any; fetch()", description: "T." } } }),
      /input_schema has a type that is not one of JSON Schema's seven at "\/properties\/t\/type"/,
    ],
    [
      "a schema nested too deep",
      definition("Evil.Deep@1.0.0", { type: "object" }, nested(129)),
      /output_schema nests deeper than 128 levels at "(\/items){30}/,
    ],
    [
      "an id that is no tool id",
      definition('Evil.Id@1.0.0"] as const; fetch("http://127.0.0.1:9"); //', {}),
      /^otc: the catalog has a tool id that is not Toolkit.Tool@x.y.z: "Evil.Id@1.0.0\\"] as const; fetch\(/,
    ],
    [
      "an id without its version",
      definition("Evil.Latest", {}),
      /^otc: the catalog has a tool id that is not Toolkit.Tool@x.y.z: "Evil.Latest"\n$/,
    ],
  ])("definitions.client-codegen-safe", "refuses %s, naming the tool and the place", async (_case, tool, message) => {
    const result = await fromFile([tool]);
    expect(result).toMatchObject({ code: EXIT.protocol, stdout: "", written: false });
    expect(result.stderr).toMatch(message);
  });

  verifies.each<[string, object, string]>([
    ["annotations that are no object", { annotations: "read-only */" }, "its annotations are not an object"],
    [
      "a hint that is no boolean",
      { annotations: { read_only: "yes */ fetch()" } },
      "its annotations' read_only is not a boolean",
    ],
    ["a title that is no string", { annotations: { title: { "*/": 1 } } }, "its annotations' title is not a string"],
    [
      "a deprecation message that is no string",
      { deprecation_message: ["*/"] },
      "its deprecation_message is not a string",
    ],
  ])("definitions.client-codegen-safe", "refuses %s, naming the tool", async (_case, extra, why) => {
    expect(await fromFile([{ ...definition("Evil.Hints@1.0.0", {}), ...extra }])).toEqual({
      code: EXIT.protocol,
      stdout: "",
      stderr: `otc: tool "Evil.Hints@1.0.0" is refused: ${why}\n`,
      written: false,
    });
  });

  verifies(
    "definitions.client-codegen-safe",
    "refuses a catalog whose bindings would pass its size bound, with one line and no file",
    async () => {
      const tool = { ...definition("Huge.Describe@1.0.0", {}), description: "x".repeat(MAX_BINDINGS_BYTES) };
      expect(await fromFile([definition("Huge.Aaa@1.0.0", {}), tool, definition("Huge.Zzz@1.0.0", {})])).toEqual({
        code: EXIT.protocol,
        stdout: "",
        stderr: `otc: the catalog is refused: its bindings would be larger than otc codegen's bound of ${MAX_BINDINGS_BYTES} bytes (passed at tool "Huge.Describe@1.0.0")\n`,
        written: false,
      });
    },
  );

  verifies("definitions.client-codegen-safe", "refuses two tools that would get the same type name", async () => {
    expect(await fromFile([definition("A.B_c@1.0.0", {}), definition("A.BC@1.0.0", {})])).toMatchObject({
      code: EXIT.protocol,
      stderr: 'otc: tools "A.B_c@1.0.0" and "A.BC@1.0.0" would both be named ABCV1_0_0\n',
      written: false,
    });
    expect(await fromFile([definition("A.B@1.0.0", {}), definition("A.B@1.0.0", {})])).toMatchObject({
      stderr: 'otc: the catalog lists tool "A.B@1.0.0" twice\n',
      written: false,
    });
  });
});

describe("generateBindings", () => {
  verifies(
    "definitions.client-codegen-safe",
    "writes the source into its header comment without a control or bidirectional character",
    async () => {
      const code = await generateBindings([], "tools\u202e\u001b[2Jnj.json\u2028fetch()");
      expect(code.split("\n")[0]).toBe("// Generated by otc codegen from tools[2Jnj.json — do not edit.");
      commentsOf(code);
    },
  );

  it("marks a deprecated tool's bindings deprecated where editors look: tools[id], through either factory", async () => {
    const code = await generateBindings(
      [
        { ...definition("Greeting.Hello@1.0.0", {}), deprecation_message: "Use Greeting.Hello@2.0.0." },
        { ...definition("Greeting.Hello@2.0.0", {}), annotations: { title: "Say hello", idempotent: true } },
        definition("Plain.Tool@1.0.0", {}),
      ],
      "annotated.json",
    );
    expect(deprecatedBindings(code, ["Greeting.Hello@1.0.0", "Greeting.Hello@2.0.0", "Plain.Tool@1.0.0"], tmp)).toEqual(
      ['tools["Greeting.Hello@1.0.0"]', 'asyncTools["Greeting.Hello@1.0.0"]'],
    );
    // Unknown annotation keys from a catalog file are left out; a tool with nothing known to say gets no comment.
    const unknown = await generateBindings(
      [{ ...definition("Plain.Tool@1.0.0", {}), annotations: { readOnlyHint: true } } as ToolDefinition],
      "x.json",
    );
    expect(unknown).toBe(await generateBindings([definition("Plain.Tool@1.0.0", {})], "x.json"));
  });

  it("types each tool's asynchronous variant as its synchronous one: typed input, a handle whose result() is typed", async () => {
    const code = await generateBindings(
      [
        definition(
          "Work.Sleep@1.0.0",
          {
            type: "object",
            properties: { ms: { type: "integer", description: "How long." } },
            required: ["ms"],
            additionalProperties: false,
          },
          { type: "object", properties: { slept_ms: { type: "integer" } }, required: ["slept_ms"] },
        ),
        definition("Work.Quiet@1.0.0", {}),
      ],
      "async.json",
    );
    expect(exportsOf(code)).toEqual([
      "WorkQuietV1_0_0Input",
      "WorkQuietV1_0_0Output",
      "WorkSleepV1_0_0Input",
      "WorkSleepV1_0_0Output",
      "Tools",
      "toolIds",
      "createTools",
      "createAsyncTools",
    ]);
    // Uses of the bindings as a user writes them; each @ts-expect-error must meet its error, or tsc reports it unused.
    const use = `
export async function use(client: OxpClient, signal: AbortSignal) {
  const tools = createAsyncTools(client);
  const call = await tools["Work.Sleep@1.0.0"]({ ms: 10 }, { callId: "c-1", signal, cancelOnAbort: true, waitSeconds: 1 });
  const seen: [number, number | undefined, string | undefined][] = [];
  for await (const { progress, total, message } of call.progress) {
    seen.push([progress, total, message]);
  }
  const { slept_ms }: { slept_ms: number } = await call.result();
  // @ts-expect-error the value is the tool's output type
  const wrong: string = await call.result();
  // @ts-expect-error ms must be a number
  await tools["Work.Sleep@1.0.0"]({ ms: "10" });
  // @ts-expect-error ms is required
  await tools["Work.Sleep@1.0.0"]({});
  // @ts-expect-error no such tool
  await tools["Work.Nothing@1.0.0"]({});
  const quiet: null = await (await tools["Work.Quiet@1.0.0"]({})).result();
  const status: "running" | "completed" | "cancelled" = (await call.status({ waitSeconds: 1 })).status;
  const cancelled: "running" | "completed" | "cancelled" = (await call.cancel()).status;
  return [call.callId, call.task, seen, slept_ms, wrong, quiet, status, cancelled] as const;
}
`;
    expect(typeErrors(`${code}${use}`, tmp)).toEqual([]);
  });

  verifies(
    "definitions.client-codegen-safe",
    "bounds the file by its size to the byte, stopping at the tool that passes the bound",
    async () => {
      const tools = ["Size.A@1.0.0", "Size.B@1.0.0", "Size.C@1.0.0"].map((id) =>
        definition(id, { type: "object", properties: { text: { type: "string", description: "Some text." } } }),
      );
      const code = await generateBindings(tools, "sized.json");
      const size = Buffer.byteLength(code);
      expect(await generateBindings(tools, "sized.json", { maxBytes: size })).toBe(code);
      const refused = (bound: number, where: string) =>
        new CatalogError(
          `the catalog is refused: its bindings would be larger than otc codegen's bound of ${bound} bytes${where}`,
        );
      await expect(generateBindings(tools, "sized.json", { maxBytes: size - 1 })).rejects.toEqual(
        refused(size - 1, ""),
      );
      const first = code.indexOf("// Size.B@1.0.0");
      await expect(generateBindings(tools, "sized.json", { maxBytes: first })).rejects.toEqual(
        refused(first, ' (passed at tool "Size.B@1.0.0")'),
      );
    },
  );

  verifies(
    "definitions.client-codegen-safe",
    "writes bounded arrays as tuples only where that stays small",
    async () => {
      const code = await generateBindings(
        [
          definition("Arrays.Bounded@1.0.0", {
            type: "object",
            properties: {
              two: { type: "array", items: { type: "string" }, minItems: 2, description: "Two or more." },
              many: { type: "array", items: { type: "string" }, minItems: 50, description: "Fifty or more." },
              upTo: { type: "array", items: { type: "string" }, maxItems: 3, description: "Three at most." },
              twenty: { type: "array", items: { type: "string" }, maxItems: 20, description: "Twenty at most." },
              range: { type: "array", items: { type: "string" }, minItems: 2, maxItems: 40, description: "2 to 40." },
              nested: {
                type: "array",
                items: { type: "array", items: { type: "number" }, minItems: 3 },
                minItems: 3,
                description: "Three lists or more.",
              },
            },
            required: ["two", "many", "upTo", "twenty", "range", "nested"],
          }),
        ],
        "arrays.json",
      );
      expect(code).toContain("  two: [string, string, ...string[]];\n");
      expect(code).toContain("  many: string[];\n");
      expect(code).toContain("  upTo: [] | [string] | [string, string] | [string, string, string];\n");
      expect(code).toContain("  twenty: string[];\n");
      expect(code).toContain("  range: [string, string, ...string[]];\n");
      expect(code).toContain("  nested: [number[], number[], number[], ...number[][]];\n");
    },
  );
});
