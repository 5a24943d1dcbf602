// The validator a core gets: Ajv where code can be generated, cfworker where it cannot (as on workerd), checked in a
// Node process run with --disallow-code-generation-from-strings, which makes `new Function` throw as workerd does.
import { execFile } from "node:child_process";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { build } from "esbuild";
import { describe, expect, it } from "vitest";
import { ServerConfigError, WireError } from "./errors.js";
import { canGenerateCode, type InputValidatorChoice, schemaValidators, toParameterErrors } from "./input-validation.js";
import { OxpCore } from "./oxp-core.js";
import type { Tool } from "./tool.js";

const CORE_DIR = fileURLToPath(new URL(".", import.meta.url));
const TSCONFIG = fileURLToPath(new URL("../../tsconfig.json", import.meta.url));

describe("choosing the validator", () => {
  it("auto takes Ajv where new Function works (this process)", () => {
    expect(canGenerateCode()).toBe(true);
    expect(schemaValidators("auto").name).toBe("ajv");
    expect(schemaValidators().name).toBe("ajv");
    expect(schemaValidators("cfworker").name).toBe("cfworker");
  });

  it("refuses an unknown choice as a configuration mistake", () => {
    expect(() => new OxpCore({ tools: [], inputValidator: "zod" as InputValidatorChoice })).toThrow(ServerConfigError);
  });
});

describe("parameter_errors", () => {
  it("keeps one message per path, the first, and names the input for an error about all of it", () => {
    expect(
      toParameterErrors([
        { instancePath: "/a", keyword: "type", params: { type: "number" }, message: "must be number" },
        { instancePath: "/a", keyword: "minimum", params: { limit: 1 }, message: "must be >= 1" },
        { instancePath: "", keyword: "required", params: { missingProperty: "b/c" }, message: "" },
        { instancePath: "/x~1y/0", keyword: "maxLength", params: {}, message: "must NOT have more than 2 characters" },
      ]),
    ).toEqual({ a: "Must be a number", "b/c": "Is required", "x/y.0": "Must NOT have more than 2 characters" });
    expect(toParameterErrors([{ instancePath: "/a", keyword: "oneOf", params: {}, message: "must match" }])).toEqual({
      input: "Must match",
    });
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

/** The module the child runs: it builds the tools with `auto`, makes every call, prints the validator and answers. */
const CHILD = `
import { OxpCore } from "./index.js";
const schemas = ${JSON.stringify(SCHEMAS)};
const calls = ${JSON.stringify(CALLS)};
const tools = Object.entries(schemas).map(([name, inputSchema]) => ({
  toolkit: "Test", name, version: "1.0.0", description: "A tool for tests.", inputSchema, outputSchema: {},
  run: (input) => input,
}));
const core = new OxpCore({ tools, inputValidator: "auto" });
const answers = [];
for (const [tool, input] of calls) {
  try {
    const response = await core.call({ tool_id: "Test." + tool, input }, { principal: "anonymous", baseUrl: "http://x" });
    answers.push({ value: response.value });
  } catch (error) {
    answers.push({ status: error.status, body: error.toBody() });
  }
}
console.log(JSON.stringify({ validator: core.registry.validator, answers }));
`;

/** The same calls, in this process, with `inputValidator`. */
async function answersHere(inputValidator: InputValidatorChoice) {
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
  const core = new OxpCore({ tools, inputValidator });
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
      answers.push({ status: error.status, body: error.toBody() });
    }
  }
  return { validator: core.registry.validator, answers };
}

describe("a runtime that refuses code generated at run time", () => {
  it("gets cfworker with auto, and answers every call as Ajv does here", async () => {
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
        conditions: ["workerd", "worker", "browser"],
        tsconfig: TSCONFIG,
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
      const here = await answersHere("ajv");
      expect(child.validator).toBe("cfworker");
      expect(child.answers).toEqual(here.answers);
      // Both valid and invalid calls were made.
      expect(here.answers.filter((entry) => (entry as { status?: number }).status === 422)).toHaveLength(3);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
