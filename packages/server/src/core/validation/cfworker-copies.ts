/** The copies @cfworker/json-schema is given: a tool schema with Ajv's string formats under names of ours, a value whose property names it can encode. */
import { format as cfworkerFormats } from "@cfworker/json-schema";
import { STRING_FORMATS } from "@otc/types/ajv-formats";

/**
 * cfworker checks a format through its own table. Ajv's string formats are added to it under names of ours, and each
 * schema's `format` renamed to them: both validators then accept the same strings, and cfworker's other users in the
 * process see their table unchanged.
 */
const FORMAT_PREFIX = "@otc/ajv-formats:";
const DATA = new Set(["enum", "const", "default", "examples"]);
const NAME_MAPS = new Set(["properties", "patternProperties", "dependentSchemas"]);

/** A copy of a schema with its formats renamed (cfworker also marks the objects it is given: not the author's). */
export function withOurFormats(schema: unknown): unknown {
  if (Array.isArray(schema)) {
    return schema.map(withOurFormats);
  }
  if (typeof schema !== "object" || schema === null) {
    return schema;
  }
  // fromEntries, not assignment: a key named __proto__ stays a key.
  return Object.fromEntries(
    Object.entries(schema).map(([key, value]) => [
      key,
      DATA.has(key)
        ? value
        : key === "format" && typeof value === "string"
          ? FORMAT_PREFIX + value
          : NAME_MAPS.has(key) && typeof value === "object" && value !== null
            ? Object.fromEntries(Object.entries(value).map(([name, sub]) => [name, withOurFormats(sub)]))
            : withOurFormats(value),
    ]),
  );
}

let formatsAdded = false;

/** Adds Ajv's string formats to cfworker's table, under {@link FORMAT_PREFIX} (once per process). */
export function addFormats(): void {
  if (!formatsAdded) {
    formatsAdded = true;
    for (const [name, check] of STRING_FORMATS) {
      cfworkerFormats[FORMAT_PREFIX + name] = check;
    }
  }
}

/** A lone surrogate: JSON allows one in a property name, and cfworker's `encodeURI` of that name throws. */
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;

/** A copy of a value whose property names are well-formed (U+FFFD for each lone surrogate). */
export function wellFormedNames(value: unknown): unknown {
  if (Array.isArray(value)) {
    return value.map(wellFormedNames);
  }
  if (typeof value !== "object" || value === null) {
    return value;
  }
  return Object.fromEntries(
    Object.entries(value).map(([key, item]) => [key.replace(LONE_SURROGATE, "\uFFFD"), wellFormedNames(item)]),
  );
}
