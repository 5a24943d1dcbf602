/**
 * Tools whose input schema is a Standard Schema (zod 4, valibot, arktype...): the JSON Schema they are listed with,
 * made by the library's own Standard JSON Schema converter (their inputs are validated by the library itself: see
 * validation/standard-schema.ts). Only the @standard-schema/spec interfaces are used: no schema library is a
 * dependency of the server.
 */
import type { StandardJSONSchemaV1, StandardSchemaV1 } from "@standard-schema/spec";
import { ServerConfigError } from "./errors.js";

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

// The input check is a validator's, beside the others; named here too for the modules that import it from here.
export type { InputCheck, InputParser } from "./validation/standard-schema.js";
