// The neutral issues' parameter_errors, and the validator a core gets without asking: chosen by export condition
// (package.json's `@otc/server/validation/default`), checked by bundling the core as each runtime's bundler would,
// and running the workerd bundle in a Node process with --disallow-code-generation-from-strings, which makes
// `new Function` throw as workerd does.
import { execFile } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { exportedSource } from "@otc/test-helpers/bundle";
import { type BuildOptions, build, type Plugin } from "esbuild";
import { describe, expect, it } from "vitest";
import { ServerConfigError, WireError } from "./errors.js";
import { type SchemaIssue, type SchemaValidators, toParameterErrors } from "./input-validation.js";
import { OxpCore } from "./oxp-core.js";
import type { Tool } from "./tool.js";

const CORE_DIR = fileURLToPath(new URL(".", import.meta.url));
const PACKAGE_DIR = fileURLToPath(new URL("../../", import.meta.url));
const TSCONFIG = join(PACKAGE_DIR, "tsconfig.json");
const WORKER_CONDITIONS = ["workerd", "worker", "browser"];

describe("parameter_errors", () => {
  const at = (instancePath: string, kind: SchemaIssue["kind"], message: string): SchemaIssue => ({
    instancePath,
    kind,
    message,
  });

  it("keys each path as a dotted property path, a missing property by its own name, the whole input as `input`", () => {
    expect(
      toParameterErrors([
        at("/a", "type", "Must be a number"),
        at("/b~1c", "required", "Is required"),
        at("/x~1y/0", "length", "Must NOT have more than 2 characters"),
        at("", "properties", "Must NOT have fewer than 4 properties"),
      ]),
    ).toEqual({
      a: "Must be a number",
      "b/c": "Is required",
      "x/y.0": "Must NOT have more than 2 characters",
      input: "Must NOT have fewer than 4 properties",
    });
  });

  it("gives a path the message of its most basic issue, whatever order the validator reported them in", () => {
    const issues = [at("/s", "enum", 'Must be one of: "x"'), at("/s", "type", "Must be a string")];
    expect(toParameterErrors(issues)).toEqual({ s: "Must be a string" });
    expect(toParameterErrors(issues.toReversed())).toEqual({ s: "Must be a string" });
  });

  it("counts a branch's summary only when nothing else explains the failure", () => {
    const summary = at("", "branches", "Must match exactly one schema in oneOf");
    expect(toParameterErrors([summary, at("/c", "required", "Is required")])).toEqual({ c: "Is required" });
    expect(toParameterErrors([summary])).toEqual({ input: "Must match exactly one schema in oneOf" });
  });

  it("keeps at most 50 paths, and __proto__ as a plain key", () => {
    const many = Array.from({ length: 60 }, (_, n) => at(`/k${n}`, "additional", "Is not an allowed property"));
    expect(Object.keys(toParameterErrors(many))).toHaveLength(50);
    const proto = toParameterErrors([at("/__proto__", "additional", "Is not an allowed property")]);
    expect(Object.keys(proto)).toEqual(["__proto__"]);
    expect(Object.getPrototypeOf(proto)).toBe(Object.prototype);
  });
});

describe("choosing the validator", () => {
  it("gives a core Ajv unless told otherwise, here in Node", () => {
    expect(new OxpCore({ tools: [] }).registry.validator).toBe("ajv");
  });

  it.each(["cfworker", "auto", null, { compile: 1 }])(
    "refuses %j as inputValidator, naming the validators to import",
    (given) => {
      const build = () => new OxpCore({ tools: [], inputValidator: given as unknown as SchemaValidators });
      expect(build).toThrow(ServerConfigError);
      expect(build).toThrow(/@otc\/server\/validation\/cfworker/);
    },
  );
});

/**
 * Resolves `@otc/server/validation/*` and `@otc/server/digest` as a bundler does, by package.json's export
 * conditions, to the source of the file the build puts there: the package's real selection, without a build.
 */
function byExportConditions(conditions: readonly string[]): Plugin {
  return {
    name: "otc-export-conditions",
    setup(bundler) {
      bundler.onResolve({ filter: /^@otc\/server\/(validation\/|digest$)/ }, (args) => {
        const entry = `./${args.path.slice("@otc/server/".length)}`;
        const path = exportedSource(PACKAGE_DIR, entry, [...conditions, "default"]);
        return path ? { path } : { errors: [{ text: `package.json exports no ${args.path}` }] };
      });
    },
  };
}

/** The modules a bundle of the core holds when built with `conditions`, relative to the repository. */
async function bundledModules(conditions: readonly string[]): Promise<string[]> {
  const result = await build({
    entryPoints: [join(CORE_DIR, "index.ts")],
    bundle: true,
    write: false,
    metafile: true,
    format: "esm",
    platform: "node",
    conditions: [...conditions],
    tsconfig: TSCONFIG,
    plugins: [byExportConditions(conditions)],
    logLevel: "silent",
  } satisfies BuildOptions);
  return Object.keys(result.metafile.inputs);
}

describe("the validator each runtime's bundler selects", () => {
  it("on Node (and Bun, Deno): Ajv, and no cfworker is loaded", async () => {
    const modules = await bundledModules(["node", "import"]);
    expect(modules.some((path) => path.includes("core/validation/ajv.ts"))).toBe(true);
    expect(modules.filter((path) => path.includes("@cfworker/") || path.includes("validation/cfworker"))).toEqual([]);
  });

  it("under the workerd conditions: cfworker, and no Ajv is loaded", async () => {
    const modules = await bundledModules(WORKER_CONDITIONS);
    expect(modules.some((path) => path.includes("core/validation/cfworker.ts"))).toBe(true);
    // Ajv's JSON files (the meta-schemas cfworker checks schemas against) are data; its code is not bundled.
    const ajvCode = modules.filter((path) => /validation\/ajv\.ts|node_modules\/ajv\/dist\/(core|2020)\.js/.test(path));
    expect(ajvCode).toEqual([]);
  });

  it("picks the digest too: node:crypto's on Node, @noble/hashes' under the workerd conditions", async () => {
    const onNode = await bundledModules(["node", "import"]);
    expect(onNode.some((path) => path.endsWith("core/digest.ts"))).toBe(true);
    expect(onNode.filter((path) => path.includes("digest-web") || path.includes("@noble/hashes"))).toEqual([]);
    const onWorkerd = await bundledModules(WORKER_CONDITIONS);
    expect(onWorkerd.some((path) => path.endsWith("core/digest-web.ts"))).toBe(true);
    expect(onWorkerd.filter((path) => path.endsWith("core/digest.ts"))).toEqual([]);
  });
});

/** Tool schemas with nested objects, enums, formats and bounds; the child process builds the same tools. */
const SCHEMAS: Record<string, object> = {
  Book: {
    type: "object",
    properties: {
      guest: {
        description: "Who stays.",
        type: "object",
        properties: {
          name: { type: "string", minLength: 1, maxLength: 40 },
          email: { type: "string", format: "email" },
          address: {
            type: "object",
            properties: { zip: { type: "string", pattern: "^[0-9]{5}$" }, country: { enum: ["FR", "DE", "US"] } },
            required: ["zip"],
          },
        },
        required: ["name", "email"],
        additionalProperties: false,
      },
      arrives: { description: "When.", type: "string", format: "date-time" },
      nights: { description: "How long.", type: "integer", minimum: 1, maximum: 30 },
    },
    required: ["guest", "arrives", "nights"],
    additionalProperties: false,
  },
  Tag: {
    type: "object",
    properties: {
      tags: { description: "Tags.", type: "array", items: { type: "string", format: "uuid" }, maxItems: 2 },
    },
  },
};

/** [tool, input]: valid and invalid calls, made in the child and here alike. */
const CALLS: [string, unknown][] = [
  ["Book", { guest: { name: "Ada", email: "ada@example.com" }, arrives: "2026-05-01T15:00:00Z", nights: 2 }],
  [
    "Book",
    {
      guest: { name: "", email: "ada", address: { zip: "7500", country: "UK" }, vip: true },
      arrives: "tomorrow",
      nights: 31,
      extra: 1,
    },
  ],
  ["Book", { guest: { name: "Ada" }, nights: 1.5 }],
  ["Tag", { tags: ["6f1c2a3e-8b1d-4c2e-9f3a-1b2c3d4e5f60"] }],
  ["Tag", { tags: ["x", 1, "y"] }],
];

/** The module the child runs: it builds the tools without choosing a validator, makes every call, prints the validator and answers. */
const CHILD = `
import { OxpCore } from "./index.js";
const schemas = ${JSON.stringify(SCHEMAS)};
const calls = ${JSON.stringify(CALLS)};
const tools = Object.entries(schemas).map(([name, inputSchema]) => ({
  toolkit: "Test", name, version: "1.0.0", description: "A tool for tests.", inputSchema, outputSchema: {},
  run: (input) => input,
}));
const core = new OxpCore({ tools });
const answers = [];
for (const [tool, input] of calls) {
  try {
    const response = await core.call({ tool_id: "Test." + tool, input }, { principal: "anonymous", baseUrl: "http://x" });
    answers.push({ value: response.value });
  } catch (error) {
    const body = error.toBody();
    answers.push({ status: error.status, message: body.message, keys: Object.keys(body.parameter_errors ?? {}).sort() });
  }
}
console.log(JSON.stringify({ validator: core.registry.validator, answers }));
`;

/** The same calls, in this process, with the default validator (Ajv). */
async function answersHere() {
  const tools = Object.entries(SCHEMAS).map(
    ([name, inputSchema]): Tool => ({
      toolkit: "Test",
      name,
      version: "1.0.0",
      description: "A tool for tests.",
      requirements: undefined,
      timeoutMs: undefined,
      inputSchema: inputSchema as Tool["inputSchema"],
      outputSchema: {} as Tool["outputSchema"],
      run: (input) => input,
    }),
  );
  const core = new OxpCore({ tools });
  const answers: unknown[] = [];
  for (const [tool, input] of CALLS) {
    try {
      const response = await core.call(
        { tool_id: `Test.${tool}`, input: input as Record<string, unknown> },
        { principal: "anonymous", baseUrl: "http://x" },
      );
      answers.push({ value: response.success ? response.value : undefined });
    } catch (error) {
      if (!(error instanceof WireError)) {
        throw error;
      }
      const body = error.toBody() as { message: string; parameter_errors?: Record<string, string> };
      answers.push({
        status: error.status,
        message: body.message,
        keys: Object.keys(body.parameter_errors ?? {}).sort(),
      });
    }
  }
  return { validator: core.registry.validator, answers };
}

describe("a core bundled for workerd, in a runtime that refuses code generated at run time", () => {
  it("gets cfworker without asking, and answers every call with the same statuses and keys as Ajv here", async () => {
    const dir = await mkdtemp(join(tmpdir(), "oxp-no-eval-"));
    try {
      // Bundled as for workerd (neutral platform, worker conditions): the child needs no TypeScript loader.
      const bundle = join(dir, "child.mjs");
      await build({
        stdin: { contents: CHILD, resolveDir: CORE_DIR, loader: "ts", sourcefile: "child.ts" },
        bundle: true,
        format: "esm",
        platform: "neutral",
        mainFields: ["module", "main"],
        conditions: WORKER_CONDITIONS,
        tsconfig: TSCONFIG,
        plugins: [byExportConditions(WORKER_CONDITIONS)],
        outfile: bundle,
        logLevel: "silent",
      });
      await writeFile(join(dir, "package.json"), '{"type":"module"}');
      const { stdout } = await promisify(execFile)(
        process.execPath,
        ["--disallow-code-generation-from-strings", bundle],
        // real time: a hung child is killed before the gate's 300 s guard, so that the failure shows its output.
        { timeout: 280_000 },
      );
      const child = JSON.parse(stdout) as Awaited<ReturnType<typeof answersHere>>;
      const here = await answersHere();
      expect(here.validator).toBe("ajv");
      expect(child.validator).toBe("cfworker");
      expect(child.answers).toEqual(here.answers);
      // Both valid and invalid calls were made.
      expect(here.answers.filter((entry) => (entry as { status?: number }).status === 422)).toHaveLength(3);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
