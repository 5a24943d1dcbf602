// Every provider answers the same inputs alike on what a client can rely on: the same parameter_errors keys, each of
// the same kind, and the same start-up refusals; the words are each provider's own. Each real difference between Ajv
// and cfworker has a test of its own below, named for it.

import { verifies } from "@otc/test-helpers/verifies";
import { toStandardJsonSchema } from "@valibot/to-json-schema";
import { type } from "arktype";
import fc from "fast-check";
import * as v from "valibot";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { ServerConfigError, WireError } from "../errors.js";
import { parameterIssues, type SchemaIssue, type SchemaValidators, toParameterErrors } from "../input-validation.js";
import { type CallMeta, OxpCore } from "../oxp-core.js";
import type { Tool } from "../tool.js";
import { ajvValidators } from "./ajv.js";
import { cfworkerValidators } from "./cfworker.js";
import { standardInputParser } from "./standard-schema.js";

const meta: CallMeta = { principal: "anonymous", baseUrl: "http://127.0.0.1" };
const PROVIDERS = { ajv: ajvValidators, cfworker: cfworkerValidators } as const;
type Provider = keyof typeof PROVIDERS;

/** A tool echoing its input, with every top-level property described as the spec asks. */
function echo(inputSchema: Record<string, unknown>): Tool {
  const properties = Object.fromEntries(
    Object.entries((inputSchema.properties ?? {}) as Record<string, object>).map(([name, schema]) => [
      name,
      typeof schema === "object" ? { description: `The ${name}.`, ...schema } : schema,
    ]),
  );
  return {
    toolkit: "Test",
    name: "Echo",
    version: "1.0.0",
    description: "Echoes its input.",
    requirements: undefined,
    timeoutMs: undefined,
    inputSchema: { ...inputSchema, properties } as Tool["inputSchema"],
    outputSchema: {} as Tool["outputSchema"],
    run: (input) => input,
  };
}

/** What a call answers: its value, or the status of the 422 and its parameter_errors' keys, sorted. */
async function answer(provider: Provider, inputSchema: Record<string, unknown>, input: object) {
  const core = new OxpCore({ tools: [echo(inputSchema)], inputValidator: PROVIDERS[provider]() });
  expect(core.registry.validator).toBe(provider);
  try {
    const response = await core.call({ tool_id: "Test.Echo", input: input as Record<string, unknown> }, meta);
    return { value: response.success ? response.value : response.error };
  } catch (error) {
    if (!(error instanceof WireError)) {
      throw error;
    }
    const body = error.toBody() as { message: string; parameter_errors?: Record<string, string> };
    return { status: error.status, message: body.message, keys: Object.keys(body.parameter_errors ?? {}).sort() };
  }
}

/** Each parameter_errors key with the kind of the issue its message comes from. */
const kinds = (issues: readonly SchemaIssue[] | undefined) =>
  issues && Object.fromEntries([...parameterIssues(issues)].map(([key, found]) => [key, found.kind]));

/** Every (path, kind) an issue list holds, once each, sorted: what a provider found, whatever its order. */
const found = (issues: readonly SchemaIssue[] | undefined) =>
  issues && [...new Set(issues.map((each) => `${each.instancePath} ${each.kind}`))].sort();

const object = (properties: Record<string, unknown>, rest: Record<string, unknown> = {}) => ({
  type: "object",
  properties,
  ...rest,
});

// [name, input_schema, input]: valid and invalid inputs, every keyword a tool schema is likely to use.
const CASES: [string, Record<string, unknown>, object][] = [
  ["a valid input", object({ a: { type: "number" }, b: { type: "string" } }, { required: ["a"] }), { a: 1, b: "x" }],
  [
    "wrong types, a missing property, unknown ones",
    object({ a: { type: "number" }, b: { type: "string" } }, { required: ["a", "c"], additionalProperties: false }),
    { a: "1", b: 2, x: 1, y: 2 },
  ],
  [
    "bounds on numbers",
    object({
      min: { type: "number", minimum: 3 },
      max: { type: "integer", maximum: 3 },
      exclusive: { type: "number", exclusiveMinimum: 0, exclusiveMaximum: 1 },
      even: { type: "integer", multipleOf: 2 },
      whole: { type: "integer" },
    }),
    { min: 2, max: 4, exclusive: 1, even: 3, whole: 1.5 },
  ],
  [
    "bounds on strings, counted in code points",
    object({
      short: { type: "string", maxLength: 2 },
      long: { type: "string", minLength: 3, pattern: "^a" },
      both: { type: "string", minLength: 3, maxLength: 5, pattern: "^a" },
    }),
    { short: "😀😀😀", long: "bb", both: "b" },
  ],
  [
    "formats",
    object({
      at: { type: "string", format: "date-time" },
      day: { type: "string", format: "date" },
      email: { type: "string", format: "email" },
      uri: { type: "string", format: "uri" },
      uuid: { type: "string", format: "uuid" },
      ip: { type: "string", format: "ipv4" },
    }),
    { at: "yesterday", day: "2023-02-29", email: "a@b", uri: "not a uri", uuid: "x", ip: "1.2.3.999" },
  ],
  [
    "valid formats",
    object({
      at: { type: "string", format: "date-time" },
      day: { type: "string", format: "date" },
      email: { type: "string", format: "email" },
    }),
    { at: "2024-02-29T12:00:00Z", day: "2024-02-29", email: "ada@example.com" },
  ],
  [
    "enums and consts",
    object({ e: { enum: ["a", 1, null] }, c: { const: { a: [1, 2] } }, t: { type: ["string", "null"] } }),
    { e: "b", c: { a: [2, 1] }, t: 1 },
  ],
  [
    "nested objects and arrays of objects",
    object(
      {
        order: {
          type: "object",
          properties: {
            lines: {
              type: "array",
              minItems: 1,
              maxItems: 3,
              items: {
                type: "object",
                properties: { sku: { type: "string", format: "uuid" }, qty: { type: "integer", minimum: 1 } },
                required: ["sku", "qty"],
                additionalProperties: false,
              },
            },
            ship: { type: "object", properties: { zip: { type: "string", pattern: "^[0-9]{5}$" } } },
          },
          required: ["lines", "ship"],
        },
      },
      { required: ["order"] },
    ),
    { order: { lines: [{ sku: "x", qty: 0 }, {}, { sku: 1, qty: 2, gift: true }], ship: { zip: "1234" } } },
  ],
  [
    "unique items, scalar and not",
    object({
      tags: { type: "array", items: { type: "string" }, uniqueItems: true },
      any: { type: "array", uniqueItems: true },
    }),
    { tags: ["a", "b", "a"], any: [1, { a: 1 }, 2, { a: 1 }] },
  ],
  [
    "the type checked after a type's own keywords",
    object({ s: { type: "string", minLength: 1, enum: ["x"] }, n: { type: "string", minLength: 1, minimum: 5 } }),
    { s: 5, n: 3 },
  ],
  [
    "anyOf, oneOf, not",
    object({
      either: { anyOf: [{ type: "string" }, { type: "number", minimum: 5 }] },
      one: { oneOf: [{ type: "number" }, { minimum: 1 }] },
      not: { not: { type: "null" } },
    }),
    { either: 1, one: 5, not: null },
  ],
  [
    "allOf and oneOf at the top",
    {
      type: "object",
      properties: { b: { type: "string" } },
      allOf: [{ required: ["a"] }, { properties: { b: { minLength: 2 } } }],
      oneOf: [{ required: ["c"] }, { required: ["d"] }],
    },
    { b: 1 },
  ],
  [
    "if/then/else",
    object(
      { kind: { type: "string" }, x: {} },
      // biome-ignore lint/suspicious/noThenProperty: JSON Schema's `then`, in a schema that is never awaited.
      { if: { properties: { kind: { const: "a" } } }, then: { required: ["x"] } },
    ),
    { kind: "a" },
  ],
  [
    "property names, counts and dependencies",
    {
      type: "object",
      propertyNames: { pattern: "^[a-z]+$", maxLength: 4 },
      minProperties: 4,
      dependentRequired: { a: ["b", "c"] },
    },
    { a: 1, Abcde: 2, ok: 3 },
  ],
  [
    "pattern properties and additional property schemas",
    {
      type: "object",
      patternProperties: { "^x": { type: "number" }, "^xy": { minimum: 5 } },
      additionalProperties: { type: "boolean" },
    },
    { xy: 1, xa: "s", other: 1, fine: true },
  ],
  [
    "tuples, contains and false schemas",
    object({
      pair: { type: "array", prefixItems: [{ type: "string" }, { type: "number" }], items: false },
      some: { type: "array", contains: { type: "number" } },
      twice: { type: "array", contains: { type: "number" }, minContains: 2 },
      inner: { type: "object", properties: { never: false } },
    }),
    { pair: [1, "a", 3, 4], some: ["a", "b"], twice: ["a", 1], inner: { never: 0 } },
  ],
  [
    "unevaluated properties",
    { type: "object", properties: { a: {} }, allOf: [{ properties: { b: {} } }], unevaluatedProperties: false },
    { a: 1, b: 2, c: 3 },
  ],
  [
    "names that need escaping in a path",
    object(
      { "a/b": { type: "number" }, "c~d": { type: "string" }, "é %20#": { type: "number" } },
      {
        additionalProperties: false,
      },
    ),
    { "a/b": "x", "c~d": 1, "é %20#": "x", "ü/ä": 1 },
  ],
];

/** The cases whose input is valid: every other one is refused with a 422. */
const VALID = new Set(["a valid input", "valid formats"]);

describe("Ajv and cfworker answer the same inputs alike (docs/protocol.md 3.3)", () => {
  verifies.each(CASES)(
    "call.input-422",
    "%s: the same answer, parameter_errors with the same keys of the same kinds",
    async (name, schema, input) => {
      const [ajv, cfworker] = await Promise.all([answer("ajv", schema, input), answer("cfworker", schema, input)]);
      expect(ajv.status ?? 200).toBe(VALID.has(name) ? 200 : 422);
      expect(cfworker).toEqual(ajv);
      const issues = (provider: Provider) => PROVIDERS[provider]().compile(echo(schema).inputSchema).errors(input);
      expect(kinds(issues("cfworker"))).toEqual(kinds(issues("ajv")));
      expect(found(issues("cfworker"))).toEqual(found(issues("ajv")));
    },
  );

  it("over many generated inputs: the same paths and kinds", () => {
    const validators = [ajvValidators(), cfworkerValidators()];
    const schemas = [CASES[1], CASES[7], CASES[14], CASES[15]].map((entry) => entry?.[1] as object);
    const key = fc.constantFrom("a", "b", "c", "x", "xy", "xa", "order", "lines", "sku", "qty", "pair", "some", "Ab");
    const leaf = fc.oneof(
      fc.integer({ min: -2, max: 8 }),
      fc.double({ noNaN: true, noDefaultInfinity: true, min: -3, max: 9 }),
      fc.constantFrom("", "a", "ab", "A1", "00000", "6f1c2a3e-8b1d-4c2e-9f3a-1b2c3d4e5f60", "2020-01-01"),
      fc.boolean(),
      fc.constant(null),
    );
    const { value } = fc.letrec((tie) => ({
      value: fc.oneof(
        { depthSize: "small" },
        leaf,
        fc.array(tie("value"), { maxLength: 4 }),
        fc.dictionary(key, tie("value"), { maxKeys: 4, noNullPrototype: true }),
      ),
    }));
    for (const schema of schemas) {
      const [ajv, cfworker] = validators.map((validator) => (validator as SchemaValidators).compile(schema));
      fc.assert(
        fc.property(fc.dictionary(key, value, { maxKeys: 5, noNullPrototype: true }), (input) => {
          expect(found(cfworker?.errors(input))).toEqual(found(ajv?.errors(input)));
          expect(kinds(cfworker?.errors(input))).toEqual(kinds(ajv?.errors(input)));
        }),
        { numRuns: 300, seed: 42 },
      );
    }
  });

  verifies.each<[string, object]>([
    ["a negative minProperties", { type: "object", minProperties: -1 }],
    ["a fractional minLength", { type: "object", properties: { a: { type: "string", minLength: 1.5 } } }],
    ["a required that is not a list", { type: "object", properties: { a: { items: { required: "x" } } } }],
    ["an empty anyOf", { type: "object", properties: { a: { anyOf: [] } } }],
    ["a duplicate in required", { type: "object", required: ["a", "a"] }],
    ["a zero multipleOf", { type: "object", properties: { a: { multipleOf: 0 } } }],
    ["a type that is no type", { type: "object", properties: { a: { type: "strin" } } }],
    ["a pattern that is no regular expression", { type: "object", properties: { a: { pattern: "(" } } }],
    ["a pattern invalid with the u flag", { type: "object", properties: { a: { pattern: "a\\Z" } } }],
    ["a bad patternProperties key", { type: "object", patternProperties: { "(": {} } }],
  ])("definitions.refused-at-start", "refuses %s at start-up, each in its library's words", (_case, schema) => {
    for (const provider of ["ajv", "cfworker"] as const) {
      const build = () =>
        new OxpCore({ tools: [echo(schema as Record<string, unknown>)], inputValidator: PROVIDERS[provider]() });
      expect(build).toThrow(ServerConfigError);
      expect(build).toThrow(
        /input_schema is not a valid JSON Schema \(schema is invalid: |input_schema is not a valid JSON Schema \(.*regular expression/,
      );
    }
  });

  it("accepts what both accept: unknown keywords, boolean subschemas, a \\p{L} pattern", () => {
    const schema = object({
      a: { "x-ui": { widget: "x" }, pattern: "\\p{L}" },
      b: { properties: { c: true, d: false } },
    });
    for (const provider of ["ajv", "cfworker"] as const) {
      expect(() => new OxpCore({ tools: [echo(schema)], inputValidator: PROVIDERS[provider]() })).not.toThrow();
    }
  });

  it("checks tool outputs alike, in the neutral words", async () => {
    const developerMessage = async (provider: Provider) => {
      const tool = { ...echo({}), outputSchema: object({ n: { type: "number", maximum: 1 } }, { required: ["m"] }) };
      const core = new OxpCore({ tools: [tool as Tool], inputValidator: PROVIDERS[provider]() });
      const response = await core.call({ tool_id: "Test.Echo", input: { n: 2 } }, meta);
      return response.success ? undefined : response.error.developer_message;
    };
    expect(await developerMessage("cfworker")).toBe(await developerMessage("ajv"));
    expect(await developerMessage("ajv")).toMatch(/: \/m Is required; \/n Must be <= 1$/);
  });
});

describe("where Ajv and cfworker differ", () => {
  it("multipleOf with a decimal fraction: cfworker computes in decimal (0.3 is a multiple of 0.1), Ajv in binary floating point (it is not)", async () => {
    const schema = object({ m: { type: "number", multipleOf: 0.1 } });
    expect(await answer("ajv", schema, { m: 0.3 })).toMatchObject({ status: 422, keys: ["m"] });
    expect(await answer("cfworker", schema, { m: 0.3 })).toEqual({ value: { m: 0.3 } });
  });

  it("a property name with a lone surrogate: cfworker's path writes it as U+FFFD (it cannot encode the name)", () => {
    const schema = object({ a: { type: "number" } }, { additionalProperties: false });
    const input = JSON.parse('{"\\ud800x": 1, "a": "s"}') as object;
    const errors = (provider: Provider) => toParameterErrors(PROVIDERS[provider]().compile(schema).errors(input) ?? []);
    expect(errors("ajv")).toEqual({ "\ud800x": "Is not an allowed property", a: "Must be a number" });
    expect(errors("cfworker")).toEqual({ "\ufffdx": "Is not an allowed property", a: "Must be a number" });
  });

  it("uniqueItems over items of another type than the item schema's: cfworker finds the duplicates, Ajv compares only items of that type", () => {
    const schema = object({ other: { type: "array", items: { type: "number" }, uniqueItems: true } });
    const input = { other: ["x", "x", 1] };
    const errors = (provider: Provider) => PROVIDERS[provider]().compile(schema).errors(input);
    expect(found(errors("ajv"))).toEqual(["/other/0 type", "/other/1 type"]);
    expect(found(errors("cfworker"))).toEqual(["/other items", "/other/0 type", "/other/1 type"]);
  });

  it.each(["int32", "int64", "float", "double"])(
    "the number format %s: Ajv checks it, cfworker checks formats of strings only, so it refuses the tool at start-up",
    (format) => {
      const schema = object({ n: { type: "number", format } });
      expect(() => new OxpCore({ tools: [echo(schema)], inputValidator: ajvValidators() })).not.toThrow();
      expect(() => new OxpCore({ tools: [echo(schema)], inputValidator: cfworkerValidators() })).toThrow(
        /uses a format this server does not know, at \/properties\/n\/format/,
      );
    },
  );

  it("with the first error only (inputs over ALL_ERRORS_MAX_VALUES values): each reports one error, maybe not the same one", () => {
    // Ajv checks additionalProperties before properties; cfworker stops at the first bad property before either.
    const schema = object({ a: { type: "number" } }, { additionalProperties: false });
    const [ajv, cfworker] = [ajvValidators(), cfworkerValidators()].map((validators) => validators.compile(schema));
    const input = { a: "x", b: 1 };
    expect(toParameterErrors(ajv?.errors(input, false) ?? [])).toEqual({ b: "Is not an allowed property" });
    expect(toParameterErrors(cfworker?.errors(input, false) ?? [])).toEqual({ a: "Must be a number" });
  });
});

describe("a Standard Schema library answers as Ajv does on the JSON Schema it lists", () => {
  const zodInput = z
    .object({ city: z.string(), days: z.number().int().max(7), unit: z.enum(["c", "f"]), tag: z.literal("x") })
    .strict();
  const valibotInput = toStandardJsonSchema(
    v.strictObject({
      city: v.string(),
      days: v.pipe(v.number(), v.integer(), v.maxValue(7)),
      unit: v.picklist(["c", "f"]),
      tag: v.literal("x"),
    }),
  );
  const arktypeInput = type({
    city: "string",
    days: "number.integer <= 7",
    unit: "'c' | 'f'",
    tag: "'x'",
  }).onUndeclaredKey("reject");

  it.each([
    ["zod", zodInput],
    ["valibot", valibotInput],
    ["arktype", arktypeInput],
  ] as const)("%s: the same keys of the same kinds", (_library, schema) => {
    const listed = schema["~standard"].jsonSchema.input({ target: "draft-2020-12" });
    const { $schema: _draft, ...json } = listed;
    const ajv = ajvValidators().compile(json);
    const parse = standardInputParser(schema);
    for (const input of [
      { days: "3", unit: "k", tag: "y", extra: true },
      { city: 1, days: 1.5, unit: "c", tag: "x" },
    ]) {
      const checked = parse(input, true);
      expect(checked).toHaveProperty("issues");
      expect(kinds((checked as { issues: SchemaIssue[] }).issues)).toEqual(kinds(ajv.errors(input)));
    }
  });
});
