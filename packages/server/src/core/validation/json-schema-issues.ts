/** JSON Schema keywords as neutral issues, for both JSON Schema providers (Ajv, cfworker): each issue's kind and words read off the schema, so both say the same. */
import { type IssueKind, issue, type SchemaIssue } from "../input-validation.js";

type Json = Record<string, unknown>;

/** Keywords whose values map names to subschemas: the segment after one is a name, not a keyword. */
const NAME_MAPS = new Set(["properties", "patternProperties", "dependentSchemas", "$defs", "definitions"]);

/** Keywords whose failure is told by the issues of their subschemas, or that only sum up those issues. */
const SUMMARIES = new Set([
  "$ref",
  "allOf",
  "properties",
  "patternProperties",
  "additionalProperties",
  "unevaluatedProperties",
  "items",
  "prefixItems",
  "additionalItems",
  "unevaluatedItems",
  "dependentSchemas",
  "dependencies",
  "dependentRequired",
  "required",
]);

const COMPARISON: Record<string, string> = {
  minimum: ">=",
  maximum: "<=",
  exclusiveMinimum: ">",
  exclusiveMaximum: "<",
};
const BOUNDS: Record<string, [IssueKind, string, string]> = {
  minLength: ["length", "fewer", "characters"],
  maxLength: ["length", "more", "characters"],
  minItems: ["items", "fewer", "items"],
  maxItems: ["items", "more", "items"],
  minProperties: ["properties", "fewer", "properties"],
  maxProperties: ["properties", "more", "properties"],
};

/** The segments of a location: `#` or nothing, then a JSON Pointer whose segments may be percent-encoded. */
export const segmentsOf = (location: string): string[] => {
  const segments = location.split("/").slice(1);
  // Most locations are plain names: nothing to decode.
  return location.includes("%") || location.includes("~")
    ? segments.map((segment) => decodeURIComponent(segment).replaceAll("~1", "/").replaceAll("~0", "~"))
    : segments;
};

/** What is at `segments` in `value`: undefined where nothing is. */
export const valueAt = (value: unknown, segments: readonly string[]): unknown =>
  segments.reduce<unknown>(
    (at, segment) =>
      typeof at === "object" && at !== null && Object.hasOwn(at, segment) ? (at as Json)[segment] : undefined,
    value,
  );

/**
 * Whether a keyword sits inside `contains` or `propertyNames` (its location's segments, the keyword's own last): the
 * items `contains` tried, or a property name, fail there without being wrong themselves; the keyword says what is.
 */
export function insideSummary(segments: readonly string[]): boolean {
  for (let i = 0; i < segments.length - 1; i++) {
    if (NAME_MAPS.has(segments[i] as string)) {
      i++;
    } else if (segments[i] === "contains" || segments[i] === "propertyNames") {
      return true;
    }
  }
  return false;
}

/** A `false` schema's refusal. */
export const notAllowed = (path: string): SchemaIssue => ({
  instancePath: path,
  kind: "other",
  message: "Is not allowed",
});

/** An array's items past those its schema allows (`items: false` after `prefixItems`, `unevaluatedItems: false`). */
export const tooManyItems = (path: string): SchemaIssue => ({
  instancePath: path,
  kind: "items",
  message: "Has more items than allowed",
});

/**
 * The issue of `keyword` failing at `path`, worded from `schema` (the schema holding the keyword); undefined for a
 * keyword whose failure other issues tell (see {@link SUMMARIES}: a provider reports `required` and the like itself).
 */
export function keywordIssue(path: string, keyword: string, schema: Json): SchemaIssue | undefined {
  const value = schema[keyword];
  const made = (kind: IssueKind, message: string): SchemaIssue => ({ instancePath: path, kind, message });
  const bound = BOUNDS[keyword];
  if (bound) {
    return made(bound[0], `Must NOT have ${bound[1]} than ${value} ${bound[2]}`);
  }
  switch (keyword) {
    case "type":
      return issue.type(path, [value].flat().map(String));
    case "enum":
      return issue.enum(path, Array.isArray(value) ? value : []);
    case "const":
      return issue.const(path, value);
    case "format":
      return made("format", `Must match format "${value}"`);
    case "pattern":
      return made("pattern", `Must match pattern "${value}"`);
    case "minimum":
    case "maximum":
    case "exclusiveMinimum":
    case "exclusiveMaximum":
      return made("range", `Must be ${COMPARISON[keyword]} ${value}`);
    case "multipleOf":
      return made("range", `Must be multiple of ${value}`);
    case "uniqueItems":
      return made("items", "Must NOT have duplicate items");
    case "contains":
    case "minContains":
    case "maxContains": {
      const min = schema.minContains ?? 1;
      const max = schema.maxContains;
      return made("items", `Must contain ${max === undefined ? `at least ${min}` : `${min} to ${max}`} matching items`);
    }
    case "propertyNames":
      return made("properties", "Has a property name that is not allowed");
    case "not":
      return made("other", "Must NOT match the schema in not");
    case "anyOf":
      return made("branches", "Must match a schema in anyOf");
    case "oneOf":
      return made("branches", "Must match exactly one schema in oneOf");
    case "if":
      return made("branches", 'Must match its "then" or "else" schema');
    default:
      return SUMMARIES.has(keyword) ? undefined : made("other", "Is invalid");
  }
}

/** Each property `names` lists that the object `value` lacks. */
export const missingOf = (value: unknown, names: unknown): string[] =>
  Array.isArray(names) && typeof value === "object" && value !== null
    ? names.filter((name): name is string => typeof name === "string" && !Object.hasOwn(value, name))
    : [];
