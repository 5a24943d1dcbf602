/**
 * Tools whose input schema is a Standard Schema (zod 4, valibot, arktype...): the JSON Schema they are listed with,
 * made by the library's own Standard JSON Schema converter, and their inputs validated by the library itself, its
 * issues turned into the same `parameter_errors` as Ajv's errors. Only the @standard-schema/spec interfaces are
 * used: no schema library is a dependency of the server.
 */
import type { StandardJSONSchemaV1, StandardSchemaV1 } from "@standard-schema/spec";
import { ServerConfigError, shorten } from "./errors.js";
import type { SchemaIssue } from "./input-validation.js";

/** The one draft an `input_schema` may be written in (docs/protocol.md 6), as a `$schema` names it. */
const DRAFT_2020_12 = "https://json-schema.org/draft/2020-12/schema";

/** Whether `value` is a Standard Schema. arktype's types are functions, so functions are looked at too. */
export function isStandardSchema(value: unknown): value is StandardSchemaV1 {
  if ((typeof value !== "object" && typeof value !== "function") || value === null) {
    return false;
  }
  const props = (value as Partial<StandardSchemaV1>)["~standard"];
  return typeof props === "object" && props !== null && props.version === 1 && typeof props.validate === "function";
}

/** How to give a top-level property a description, in the words of the library the schema was written with. */
export function describeHint(vendor: string): string {
  switch (vendor) {
    case "zod":
      return 'in zod, add .describe("...") or .meta({ description: "..." }) to the property';
    case "valibot":
      return 'in valibot, pipe the property through v.description("...")';
    case "arktype":
      return 'in arktype, add .describe("...") to the property\'s type';
    default:
      return `give the property a description in ${vendor}, or pass inputJsonSchema`;
  }
}

/** Why a library wrote `$ref`/`$defs`, and what to do instead. */
export function selfContainedHint(vendor: string): string {
  const why =
    vendor === "zod"
      ? "zod writes $ref and $defs for a recursive schema and for one registered with an id (.meta({ id }))"
      : vendor === "arktype"
        ? "arktype writes $ref and $defs for a recursive (cyclic) type"
        : vendor === "valibot"
          ? "valibot writes $ref and $defs for a recursive (v.lazy) schema and for the definitions it is given"
          : `${vendor} wrote a reference`;
  return `${why}: an OXP input_schema is self-contained, so inline the shape (no recursion, no id), or pass inputJsonSchema`;
}

/**
 * The JSON Schema a Standard Schema tool is listed with: `explicit` when given, else the library's Standard JSON
 * Schema converter (`~standard.jsonSchema.input`), asked for draft 2020-12. A root `$schema` naming draft 2020-12
 * is dropped (section 6 fixes that draft for every input_schema, so it says nothing); any other is refused.
 * Throws a {@link ServerConfigError} naming the tool and how to fix it.
 */
export function standardInputJsonSchema(
  toolId: string,
  schema: StandardSchemaV1,
  explicit: Record<string, unknown> | undefined,
): Record<string, unknown> {
  const vendor = schema["~standard"].vendor;
  const refuse = (why: string): never => {
    throw new ServerConfigError(`Tool '${toolId}' is refused: ${why}`);
  };
  let json: Record<string, unknown>;
  if (explicit !== undefined) {
    json = explicit;
  } else {
    const converter = (schema as unknown as Partial<StandardJSONSchemaV1>)["~standard"]?.jsonSchema;
    if (typeof converter?.input !== "function") {
      const wrap =
        vendor === "valibot" ? " (valibot: wrap the schema in toStandardJsonSchema from @valibot/to-json-schema)" : "";
      return refuse(
        `its ${vendor} inputSchema has no Standard JSON Schema converter (~standard.jsonSchema)${wrap}; or pass inputJsonSchema`,
      );
    }
    try {
      json = converter.input({ target: "draft-2020-12" });
    } catch (error) {
      const why = error instanceof Error ? error.message : String(error);
      return refuse(
        `its ${vendor} inputSchema cannot be written as JSON Schema (${why}); use types JSON can carry, or pass inputJsonSchema`,
      );
    }
  }
  if (typeof json !== "object" || json === null || Array.isArray(json)) {
    return refuse(`its ${vendor} inputSchema's JSON Schema is not an object`);
  }
  if (!("$schema" in json)) {
    return json;
  }
  const { $schema, ...rest } = json;
  if ($schema !== DRAFT_2020_12) {
    return refuse(`its input JSON Schema is written for ${JSON.stringify($schema)}, not draft 2020-12`);
  }
  return rest;
}

/**
 * A tool input as its schema library judged it: the value the tool runs with, what is wrong with it, or the error
 * the library threw (a refinement of the tool author's that failed), which fails the call as a tool's error would.
 */
export type InputCheck = { value: unknown } | { issues: readonly SchemaIssue[] } | { failure: true; error: unknown };

/** Checks a tool's input with its schema library: at once when the library answers synchronously, else later. */
export type InputParser = (input: unknown, all: boolean) => InputCheck | Promise<InputCheck>;

/**
 * The input check of a Standard Schema tool: the library validates (zod, valibot and arktype answer synchronously
 * unless a schema has an asynchronous refinement), and its issues are put in Ajv's shape, so that the 422's
 * `parameter_errors` read as for a JSON Schema tool. `all: false` keeps only the first issue (a hostile input's).
 */
export function standardInputParser(schema: StandardSchemaV1): InputParser {
  const vendor = schema["~standard"].vendor;
  const judge = (input: unknown, all: boolean, result: StandardSchemaV1.Result<unknown>): InputCheck =>
    result.issues ? { issues: toSchemaIssues(result.issues, input, vendor, all) } : { value: result.value };
  return (input, all) => {
    let result: StandardSchemaV1.Result<unknown> | Promise<StandardSchemaV1.Result<unknown>>;
    try {
      result = schema["~standard"].validate(input);
    } catch (error) {
      return { failure: true, error };
    }
    return result instanceof Promise
      ? result.then(
          (settled) => judge(input, all, settled),
          (error: unknown) => ({ failure: true, error }),
        )
      : judge(input, all, result);
  };
}

/** The type names Ajv's `type` errors use, by the names libraries give them. */
const TYPE_NAMES: Record<string, string> = {
  array: "array",
  boolean: "boolean",
  int: "integer",
  integer: "integer",
  null: "null",
  number: "number",
  object: "object",
  loose_object: "object",
  strict_object: "object",
  string: "string",
};

/** A JSON Pointer of property keys, as Ajv's `instancePath`. */
const pointer = (keys: readonly PropertyKey[]) =>
  keys.map((key) => `/${String(key).replaceAll("~", "~0").replaceAll("/", "~1")}`).join("");

/** The keys of an issue's path, whether written as keys or as `{ key }` segments. */
const keysOf = (issue: StandardSchemaV1.Issue): PropertyKey[] =>
  (issue.path ?? []).map((segment) => (typeof segment === "object" && segment !== null ? segment.key : segment));

/** Whether the value at `keys` is a property missing from its object: every library reports those its own way. */
function isMissing(input: unknown, keys: readonly PropertyKey[]): boolean {
  if (keys.length === 0) {
    return false;
  }
  let parent = input;
  for (const key of keys.slice(0, -1)) {
    if (typeof parent !== "object" || parent === null) {
      return false;
    }
    parent = (parent as Record<PropertyKey, unknown>)[key];
  }
  return (
    typeof parent === "object" &&
    parent !== null &&
    !Array.isArray(parent) &&
    !Object.hasOwn(parent, keys[keys.length - 1] as PropertyKey)
  );
}

/** The longest library message a 422 repeats: a refinement's own message may quote anything. */
const MESSAGE_MAX = 200;

/**
 * A library's message as a sentence of ours (its first letter lowercased: `describe` capitalizes it), without a
 * final period, never repeating the value sent (which may be a megabyte long), and cut to {@link MESSAGE_MAX}.
 */
function sentence(message: string): string {
  const trimmed = shorten(
    message
      .replace(/ \(was [\s\S]*\)$/, "") // arktype: `must be a string (was 5)`
      .replace(/ but received [\s\S]*$/, "") // valibot: `Invalid type: Expected string but received 5`
      .replace(/: Received [\s\S]*$/, "") // valibot, a check without an expectation: `Invalid email: Received "..."`
      .replace(/\.$/, ""),
    MESSAGE_MAX,
  );
  return trimmed.charAt(0).toLowerCase() + trimmed.slice(1);
}

/** Parses valibot's `("en" | "fr")`; undefined when a part is no JSON value. */
function parseOptions(expected: string): unknown[] | undefined {
  try {
    return expected
      .replace(/^\((.*)\)$/s, "$1")
      .split(" | ")
      .map((part) => JSON.parse(part) as unknown);
  } catch {
    return undefined;
  }
}

/** One issue in Ajv's shape, read through the fields its library is known to add to the Standard ones. */
function toSchemaIssue(
  issue: StandardSchemaV1.Issue & Record<string, unknown>,
  input: unknown,
  vendor: string,
): SchemaIssue[] {
  const keys = keysOf(issue);
  const at = pointer(keys);
  const parent = pointer(keys.slice(0, -1));
  const last = String(keys[keys.length - 1]);
  const fallback = (message = issue.message): SchemaIssue[] => [
    {
      instancePath: at,
      keyword: String(issue.code ?? issue.type ?? "invalid"),
      params: {},
      message: sentence(message),
    },
  ];
  const type = (name: string): SchemaIssue[] => [
    { instancePath: at, keyword: "type", params: { type: TYPE_NAMES[name] ?? name } },
  ];
  const oneOf = (values: readonly unknown[]): SchemaIssue[] =>
    values.length === 1
      ? [{ instancePath: at, keyword: "const", params: { allowedValue: values[0] } }]
      : [{ instancePath: at, keyword: "enum", params: { allowedValues: values } }];
  const unknownKey = (base: string, key: string): SchemaIssue => ({
    instancePath: base,
    keyword: "additionalProperties",
    params: { additionalProperty: key },
  });

  if (issue.code === "unrecognized_keys" && Array.isArray(issue.keys)) {
    // zod: one issue at the object for all its unknown keys.
    return issue.keys.map((key) => unknownKey(at, String(key)));
  }
  if (
    (vendor === "valibot" && issue.expected === "never") ||
    (vendor === "arktype" && issue.code === "predicate" && issue.expected === "removed")
  ) {
    return [unknownKey(parent, last)];
  }
  if (isMissing(input, keys)) {
    return [{ instancePath: parent, keyword: "required", params: { missingProperty: last } }];
  }
  switch (vendor) {
    case "zod":
      if (issue.code === "invalid_type" && typeof issue.expected === "string") {
        return type(issue.expected);
      }
      if (issue.code === "invalid_value" && Array.isArray(issue.values)) {
        return oneOf(issue.values);
      }
      return fallback();
    case "valibot":
      if (issue.kind === "schema" && typeof issue.type === "string" && TYPE_NAMES[issue.type]) {
        return type(issue.type);
      }
      if (issue.type === "literal" || issue.type === "picklist" || issue.type === "enum") {
        const values = typeof issue.expected === "string" ? parseOptions(issue.expected) : undefined;
        return values ? oneOf(values) : fallback();
      }
      return fallback();
    case "arktype":
      return arktypeIssue(issue, at, { type, oneOf, fallback });
    default:
      return fallback();
  }
}

/** arktype's codes: `domain` (a type), `proto` (a class), `unit` (one value) and unions of them. */
function arktypeIssue(
  issue: Record<string, unknown>,
  at: string,
  make: {
    type: (name: string) => SchemaIssue[];
    oneOf: (values: readonly unknown[]) => SchemaIssue[];
    fallback: (message?: string) => SchemaIssue[];
  },
): SchemaIssue[] {
  const problem = typeof issue.problem === "string" ? issue.problem : undefined;
  if (issue.code === "domain" && typeof issue.domain === "string") {
    return make.type(issue.domain);
  }
  if (issue.code === "proto" && issue.proto === Array) {
    return make.type("array");
  }
  if (issue.code === "unit") {
    return make.oneOf([issue.unit]);
  }
  if (issue.code === "union" && Array.isArray(issue.errors)) {
    const branches = issue.errors as Record<string, unknown>[];
    if (branches.every((branch) => branch.code === "unit")) {
      return make.oneOf(branches.map((branch) => branch.unit));
    }
    if (branches.every((branch) => branch.code === "domain")) {
      return [
        { instancePath: at, keyword: "type", params: { type: branches.map((branch) => branch.domain).join(",") } },
      ];
    }
  }
  // A union's problem starts with the path (`lang must be...`); a plain one's does not.
  return make.fallback(issue.code !== "union" && problem ? problem : undefined);
}

/**
 * A library's issues as {@link SchemaIssue}s, for `toParameterErrors`: the same dot paths and, for what Ajv also
 * reports (a wrong type, a missing or unknown property, a value not among those allowed), the same sentences; any
 * other issue keeps the library's message, capitalized and without the value sent. Only the first when `all` is false.
 */
export function toSchemaIssues(
  issues: readonly StandardSchemaV1.Issue[],
  input: unknown,
  vendor: string,
  all = true,
): SchemaIssue[] {
  const out: SchemaIssue[] = [];
  for (const issue of all ? issues : issues.slice(0, 1)) {
    out.push(...toSchemaIssue(issue as StandardSchemaV1.Issue & Record<string, unknown>, input, vendor));
  }
  return out;
}
