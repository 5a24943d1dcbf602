/**
 * Tool schemas interpreted by @cfworker/json-schema, for runtimes that refuse code generated at run time
 * (Cloudflare workerd): no `new Function`. Its errors are rewritten as Ajv's, in Ajv's order, so that a 422's
 * `parameter_errors` read the same whichever validator the runtime got.
 */
import {
  format as cfworkerFormats,
  deepCompareStrict,
  dereference,
  type OutputUnit,
  type Schema,
  type ValidationResult,
  validate,
} from "@cfworker/json-schema";
import { STRING_FORMATS } from "@otc/types/ajv";
import metaApplicator from "ajv/dist/refs/json-schema-2020-12/meta/applicator.json" with { type: "json" };
import metaContent from "ajv/dist/refs/json-schema-2020-12/meta/content.json" with { type: "json" };
import metaCore from "ajv/dist/refs/json-schema-2020-12/meta/core.json" with { type: "json" };
import metaFormat from "ajv/dist/refs/json-schema-2020-12/meta/format-annotation.json" with { type: "json" };
import metaData from "ajv/dist/refs/json-schema-2020-12/meta/meta-data.json" with { type: "json" };
import metaUnevaluated from "ajv/dist/refs/json-schema-2020-12/meta/unevaluated.json" with { type: "json" };
import metaValidation from "ajv/dist/refs/json-schema-2020-12/meta/validation.json" with { type: "json" };
import metaSchema from "ajv/dist/refs/json-schema-2020-12/schema.json" with { type: "json" };
import type { SchemaIssue, SchemaValidator, SchemaValidators } from "./input-validation.js";

type Lookup = Record<string, Schema | boolean>;
type Json = Record<string, unknown>;

/** Keywords whose values map names to subschemas: their keys are names, not keywords. */
const NAME_MAPS = new Set(["properties", "patternProperties", "dependentSchemas", "$defs", "definitions"]);
/** Keywords whose values are data, not subschemas. */
const DATA = new Set(["enum", "const", "examples", "default"]);

/**
 * A copy of a schema, for cfworker (whose `dereference` marks the objects it is given), with `rewrite` applied
 * to every keyword in a schema position: it returns the entries that replace the keyword, or undefined to copy it.
 */
function copySchema(
  schema: unknown,
  rewrite: (key: string, value: unknown) => [string, unknown][] | undefined,
): unknown {
  if (Array.isArray(schema)) {
    return schema.map((item) => copySchema(item, rewrite));
  }
  if (typeof schema !== "object" || schema === null) {
    return schema;
  }
  // fromEntries, not assignment: a key named __proto__ stays a key.
  return Object.fromEntries(
    Object.entries(schema).flatMap(([key, value]): [string, unknown][] => {
      if (DATA.has(key)) {
        return [[key, value]];
      }
      if (NAME_MAPS.has(key) && typeof value === "object" && value !== null && !Array.isArray(value)) {
        const names = Object.entries(value).map(([name, sub]) => [name, copySchema(sub, rewrite)]);
        return [[key, Object.fromEntries(names)]];
      }
      return rewrite(key, value) ?? [[key, copySchema(value, rewrite)]];
    }),
  );
}

/** Every schema-position keyword of a schema, at any depth, with its value. */
function* keywordsOf(schema: unknown): Generator<[string, unknown]> {
  if (Array.isArray(schema)) {
    for (const item of schema) {
      yield* keywordsOf(item);
    }
    return;
  }
  if (typeof schema !== "object" || schema === null) {
    return;
  }
  for (const [key, value] of Object.entries(schema)) {
    yield [key, value];
    if (DATA.has(key)) {
      continue;
    }
    if (NAME_MAPS.has(key) && typeof value === "object" && value !== null) {
      for (const sub of Object.values(value)) {
        yield* keywordsOf(sub);
      }
    } else {
      yield* keywordsOf(value);
    }
  }
}

/**
 * cfworker checks a format through its own table, which only has its own checks. Ajv's (ajv-formats') are added
 * to it under names of ours, and each schema's `format` renamed to them: both validators then accept the same
 * strings, and cfworker's users elsewhere in the process see their table unchanged.
 */
const FORMAT_PREFIX = "@otc/ajv-formats:";
let formatsAdded = false;

function addFormats(): void {
  if (formatsAdded) {
    return;
  }
  formatsAdded = true;
  for (const [name, check] of STRING_FORMATS) {
    cfworkerFormats[FORMAT_PREFIX + name] = check;
  }
}

const META_ID = metaSchema.$id;
let meta: { root: Schema; lookup: Lookup } | undefined;

/**
 * The draft 2020-12 meta-schemas, the very documents Ajv checks schemas against (from the same package), as
 * cfworker can follow them: it has no `$dynamicRef`, whose one use here (`#meta`) means the meta-schema itself.
 * Formats are left unchecked, as Ajv leaves them when it checks a schema.
 */
function metaSchemas(): { root: Schema; lookup: Lookup } {
  if (!meta) {
    const rewrite = (key: string): [string, unknown][] | undefined =>
      key === "$dynamicRef" ? [["$ref", META_ID]] : key === "format" ? [] : undefined;
    const root = copySchema(metaSchema, rewrite) as Schema;
    const lookup = dereference(root);
    for (const vocabulary of [
      metaCore,
      metaApplicator,
      metaUnevaluated,
      metaValidation,
      metaData,
      metaFormat,
      metaContent,
    ]) {
      dereference(copySchema(vocabulary, rewrite) as Schema, lookup);
    }
    meta = { root, lookup };
  }
  return meta;
}

/** The segments of a cfworker location: `#` and a JSON Pointer whose segments went through `encodeURI`. */
function segmentsOf(location: string): string[] {
  return location
    .split("/")
    .slice(1)
    .map((segment) => decodeURIComponent(segment).replaceAll("~1", "/").replaceAll("~0", "~"));
}

const pointerOf = (segments: readonly string[]) =>
  segments.map((segment) => `/${segment.replaceAll("~", "~0").replaceAll("/", "~1")}`).join("");

/** What is between a fixed prefix and suffix of a message; undefined when the message is not of that form. */
function between(text: string, prefix: string, suffix: string): string | undefined {
  return text.startsWith(prefix) && text.endsWith(suffix) && text.length >= prefix.length + suffix.length
    ? text.slice(prefix.length, text.length - suffix.length)
    : undefined;
}

// Ajv's evaluation order: the keywords of any type first (the type check leading), then those of the value's
// type, group by group. See ajv's lib/compile/rules.ts and validate/index.ts.
const UNTYPED = ["type", "$ref", "const", "enum", "not", "anyOf", "oneOf", "allOf", "if"];
const GROUPS: Record<string, readonly string[]> = {
  number: ["maximum", "minimum", "exclusiveMaximum", "exclusiveMinimum", "multipleOf", "format"],
  string: ["maxLength", "minLength", "pattern", "format"],
  array: [
    "maxItems",
    "minItems",
    "prefixItems",
    "items",
    "contains",
    "uniqueItems",
    "maxContains",
    "minContains",
    "unevaluatedItems",
  ],
  object: [
    "maxProperties",
    "minProperties",
    "required",
    "propertyNames",
    "additionalProperties",
    "dependencies",
    "properties",
    "patternProperties",
    "dependentRequired",
    "dependentSchemas",
    "unevaluatedProperties",
  ],
};
const GROUP_ORDER = ["number", "string", "array", "object"];
/** Sorts a summary (anyOf, oneOf, if, contains, propertyNames) after the errors it sums up, as Ajv reports it. */
const AFTER = Number.MAX_SAFE_INTEGER;

const typeGroup = (value: unknown) =>
  typeof value === "number"
    ? "number"
    : typeof value === "string"
      ? "string"
      : Array.isArray(value)
        ? "array"
        : typeof value === "object" && value !== null
          ? "object"
          : undefined;

/** Where Ajv evaluates `keyword` of `schema` for `value`: its sort rank. */
function rank(schema: Json, keyword: string, value: unknown): number {
  const kw = keyword === "then" || keyword === "else" ? "if" : keyword;
  if (kw === "type" && typeof schema.type === "string") {
    // A single type with keywords of its own group is checked in that group's else branch, after the rest.
    const group = Object.hasOwn(GROUPS, schema.type) ? GROUPS[schema.type] : undefined;
    if (group?.some((key) => schema[key] !== undefined)) {
      return 100 * (GROUP_ORDER.indexOf(schema.type) + 1) + 99;
    }
  }
  const untyped = UNTYPED.indexOf(kw);
  if (untyped !== -1) {
    return untyped;
  }
  const group = typeGroup(value);
  const index = group === undefined ? -1 : (GROUPS[group]?.indexOf(kw) ?? -1);
  return index === -1 ? 1_000 : 100 * (GROUP_ORDER.indexOf(group as string) + 1) + index;
}

const ordinals = new WeakMap<object, Map<string, number>>();

/** The position of an object's member in `for...in` order (the order both validators visit members in). */
function ordinal(object: unknown, member: string): number {
  if (Array.isArray(object)) {
    return Number(member);
  }
  if (typeof object !== "object" || object === null) {
    return 0;
  }
  let positions = ordinals.get(object);
  if (!positions) {
    positions = new Map(Object.keys(object).map((key, index) => [key, index]));
    ordinals.set(object, positions);
  }
  return positions.get(member) ?? 0;
}

const childOf = (value: unknown, member: string | undefined): unknown =>
  member !== undefined && typeof value === "object" && value !== null
    ? (value as Record<string, unknown>)[member]
    : undefined;

/** Where a unit's keyword sits: its schema, the value it checked and that value's path, and its sort key. */
interface Place {
  schema: Json;
  value: unknown;
  path: string[];
  key: number[];
}

/**
 * Follows a schema location (all of it: its last segment is a subschema's, not a keyword) down the schema and,
 * where an applicator steps into a member of the value, down the value too.
 */
function follow(
  segments: readonly string[],
  members: readonly string[],
  context: { root: unknown; lookup: Lookup; input: unknown },
): Place {
  let schema = context.root as Json;
  let value = context.input;
  const path: string[] = [];
  const key: number[] = [];
  let depth = 0;
  const step = (into: string | undefined, named = true) => {
    depth++;
    if (named && into !== undefined) {
      path.push(into);
    }
    value = named ? childOf(value, into) : into;
  };
  for (let i = 0; i < segments.length; i++) {
    const keyword = segments[i] as string;
    key.push(rank(schema, keyword, value));
    let next = schema[keyword];
    if (keyword === "$ref") {
      next = context.lookup[String(schema.__absolute_ref__ ?? schema.$ref)];
      key.push(0);
    } else if (NAME_MAPS.has(keyword) || keyword === "dependencies") {
      const name = segments[++i] as string;
      const names = Object.keys((next as Json | undefined) ?? {});
      next = (next as Json | undefined)?.[name];
      key.push(names.indexOf(name));
      if (keyword === "properties") {
        step(members[depth]);
      } else if (keyword === "patternProperties") {
        key.push(ordinal(value, members[depth] as string));
        step(members[depth]);
      }
    } else if (keyword === "allOf" || keyword === "anyOf" || keyword === "oneOf" || keyword === "prefixItems") {
      const index = Number(segments[++i]);
      next = (next as unknown[] | undefined)?.[index];
      key.push(index);
      if (keyword === "prefixItems") {
        step(members[depth]);
      }
    } else if (
      keyword === "items" ||
      keyword === "contains" ||
      keyword === "unevaluatedItems" ||
      keyword === "additionalItems" ||
      keyword === "additionalProperties" ||
      keyword === "unevaluatedProperties" ||
      keyword === "propertyNames"
    ) {
      const member = members[depth] as string;
      key.push(ordinal(value, member));
      // A property name's errors are the object's, as Ajv reports them (with the name in their params).
      if (keyword === "propertyNames") {
        step(member, false);
      } else {
        step(member);
      }
    } else {
      key.push(0);
    }
    schema = (typeof next === "object" && next !== null ? next : {}) as Json;
  }
  return { schema, value, path, key };
}

const COMPARISON: Record<string, string> = {
  maximum: "<=",
  minimum: ">=",
  exclusiveMaximum: "<",
  exclusiveMinimum: ">",
};
const MORE_OR_FEWER: Record<string, [string, string]> = {
  maxLength: ["more", "characters"],
  minLength: ["fewer", "characters"],
  maxItems: ["more", "items"],
  minItems: ["fewer", "items"],
  maxProperties: ["more", "properties"],
  minProperties: ["fewer", "properties"],
};

function isType(value: unknown, type: unknown): boolean {
  switch (type) {
    case "integer":
      return typeof value === "number" && !(value % 1) && !Number.isNaN(value);
    case "null":
      return value === null;
    case "array":
      return Array.isArray(value);
    case "object":
      return typeof value === "object" && value !== null && !Array.isArray(value);
    default:
      return typeof value === type;
  }
}

/** The pair of equal items Ajv names (it searches from the end, by a hash for scalar item types, else pairwise). */
function duplicateItems(items: readonly unknown[], itemSchema: unknown): { i: number; j: number } | undefined {
  const types = typeof itemSchema === "object" && itemSchema !== null ? [(itemSchema as Json).type ?? []].flat() : [];
  if (types.length > 0 && !types.some((type) => type === "object" || type === "array")) {
    // A plain object, as Ajv's: its keys are the items as strings.
    const indices: Record<string, unknown> = {};
    for (let i = items.length; i--; ) {
      const item = items[i];
      if (!types.some((type) => isType(item, type))) {
        continue;
      }
      const name = `${item}${types.length > 1 && typeof item === "string" ? "_" : ""}`;
      const j = indices[name];
      if (typeof j === "number") {
        return { i, j };
      }
      indices[name] = i;
    }
    return undefined;
  }
  for (let i = items.length; i--; ) {
    for (let j = i; j--; ) {
      if (deepCompareStrict(items[i], items[j])) {
        return { i, j };
      }
    }
  }
  return undefined;
}

const COMPOSITE = new Set(["anyOf", "oneOf", "if"]);

interface Context {
  root: unknown;
  lookup: Lookup;
  input: unknown;
  /** Whether every error is wanted (shortCircuit off): then `contains` is explained item by item, as Ajv does. */
  all: boolean;
}

/**
 * One cfworker unit as Ajv's error (undefined for the summaries Ajv does not report), with where it sorts. `next` is
 * the unit after it, for a summary whose details only that one tells.
 */
function convert(
  unit: OutputUnit,
  place: Place,
  next: OutputUnit | undefined,
): { issue: SchemaIssue; tail: number[] } | undefined {
  const { schema, value } = place;
  const issue = (keyword: string, params: Record<string, unknown>, message: string, tail: number[] = [0]) => ({
    issue: { instancePath: pointerOf(place.path), keyword, params, message },
    tail,
  });
  const keyword = unit.keyword;
  switch (keyword) {
    case "type": {
      const type = [schema.type].flat().join(",");
      return issue("type", { type }, `must be ${type}`);
    }
    case "const":
      return issue("const", { allowedValue: schema.const }, "must be equal to constant");
    case "enum":
      return issue("enum", { allowedValues: schema.enum }, "must be equal to one of the allowed values");
    case "not":
      return issue("not", {}, "must NOT be valid");
    case "anyOf":
      return issue("anyOf", {}, "must match a schema in anyOf", [AFTER]);
    case "oneOf":
      return issue("oneOf", { passingSchemas: null }, "must match exactly one schema in oneOf", [AFTER]);
    case "if": {
      const clause = unit.error.includes('"else"') ? "else" : "then";
      return issue("if", { failingKeyword: clause }, `must match "${clause}" schema`, [AFTER]);
    }
    case "required": {
      const missing = between(unit.error, 'Instance does not have required property "', '".') ?? "";
      return issue("required", { missingProperty: missing }, `must have required property '${missing}'`);
    }
    case "maximum":
    case "minimum":
    case "exclusiveMaximum":
    case "exclusiveMinimum": {
      const comparison = COMPARISON[keyword];
      return issue(keyword, { comparison, limit: schema[keyword] }, `must be ${comparison} ${schema[keyword]}`);
    }
    case "multipleOf":
      return issue(keyword, { multipleOf: schema.multipleOf }, `must be multiple of ${schema.multipleOf}`);
    case "maxLength":
    case "minLength":
    case "maxItems":
    case "minItems":
    case "maxProperties":
    case "minProperties": {
      const [comparison, things] = MORE_OR_FEWER[keyword] as [string, string];
      return issue(
        keyword,
        { limit: schema[keyword] },
        `must NOT have ${comparison} than ${schema[keyword]} ${things}`,
      );
    }
    case "pattern":
      return issue("pattern", { pattern: schema.pattern }, `must match pattern "${schema.pattern}"`);
    case "format": {
      const format = String(schema.format).replace(FORMAT_PREFIX, "");
      return issue("format", { format }, `must match format "${format}"`);
    }
    case "uniqueItems": {
      const pair = Array.isArray(value) ? duplicateItems(value, schema.items) : undefined;
      // Ajv compares only the items of the item schema's types: a duplicate of another type is no error to it.
      if (!pair) {
        return undefined;
      }
      return issue(
        "uniqueItems",
        pair,
        `must NOT have duplicate items (items ## ${pair.j} and ${pair.i} are identical)`,
      );
    }
    case "contains":
    case "minContains":
    case "maxContains": {
      const min = schema.minContains ?? 1;
      const max = schema.maxContains;
      return max === undefined
        ? issue("contains", { minContains: min }, `must contain at least ${min} valid item(s)`, [AFTER])
        : issue(
            "contains",
            { minContains: min, maxContains: max },
            `must contain at least ${min} and no more than ${max} valid item(s)`,
            [AFTER],
          );
    }
    case "dependentRequired":
    case "dependencies": {
      const dependencies = (schema[keyword] ?? {}) as Record<string, unknown>;
      for (const [property, deps] of Object.entries(dependencies)) {
        if (!Array.isArray(deps)) {
          continue;
        }
        const missing = between(unit.error, `Instance has "${property}" but does not have "`, '".');
        if (missing === undefined || !deps.includes(missing)) {
          continue;
        }
        const names = deps.join(", ");
        return issue(
          keyword,
          { property, missingProperty: missing, depsCount: deps.length, deps: names },
          `must have ${deps.length === 1 ? "property" : "properties"} ${names} when property ${property} is present`,
        );
      }
      // The subschema form's summary: its errors say more.
      return undefined;
    }
    case "additionalProperties":
    case "unevaluatedProperties": {
      if (schema[keyword] !== false) {
        return undefined;
      }
      const additional = keyword === "additionalProperties";
      const member =
        between(
          unit.error,
          'Property "',
          `" does not match ${additional ? "additional" : "unevaluated"} properties schema.`,
        ) ?? "";
      return issue(
        keyword,
        { [additional ? "additionalProperty" : "unevaluatedProperty"]: member },
        `must NOT have ${additional ? "additional" : "unevaluated"} properties`,
        [ordinal(value, member), 0],
      );
    }
    case "items":
    case "unevaluatedItems": {
      if (schema[keyword] !== false) {
        return undefined;
      }
      // Ajv's limit is how many items other keywords took: the index of the first refused one.
      const limit =
        keyword === "items"
          ? ((schema.prefixItems as unknown[] | undefined)?.length ?? 0)
          : Number(segmentsOf(next?.instanceLocation ?? "").at(-1) ?? 0);
      return issue(keyword, { limit }, `must NOT have more than ${limit} items`);
    }
    case "propertyNames": {
      const name = between(unit.error, 'Property name "', '" does not match schema.') ?? "";
      return issue("propertyNames", { propertyName: name }, "property name must be valid", [
        ordinal(value, name),
        AFTER,
      ]);
    }
    case "false":
      return issue("false schema", {}, "boolean schema is false");
    case "$ref":
    case "$recursiveRef":
    case "properties":
    case "patternProperties":
    case "allOf":
    case "prefixItems":
    case "additionalItems":
    case "dependentSchemas":
      // Summaries: Ajv reports only the errors under them.
      return undefined;
    default:
      return issue(keyword, {}, unit.error.charAt(0).toLowerCase() + unit.error.slice(1).replace(/\.$/, ""));
  }
}

/** cfworker's output units as Ajv's errors, in Ajv's order. */
function toIssues(units: readonly OutputUnit[], context: Context): SchemaIssue[] {
  const placed: { issue: SchemaIssue; key: number[] }[] = [];
  const queue = [...units];
  /** Array locations whose `items: false` was reported: Ajv reports it once per array, cfworker once per item. */
  const itemsRefused = new Set<string>();
  let previous: { unit: OutputUnit; key: number[] } | undefined;
  let skipFalse = false;
  for (let n = 0; n < queue.length; n++) {
    const unit = queue[n] as OutputUnit;
    const members = segmentsOf(unit.instanceLocation);
    if (unit.keyword === "false") {
      if (skipFalse) {
        skipFalse = false;
        continue;
      }
      // cfworker gives a false schema's error the value's location for the schema's: place it by its parent.
      const parent = previous?.unit;
      let key = previous?.key ?? [];
      let path = members;
      if (parent && parent.keyword === "properties") {
        const place = follow([...segmentsOf(parent.keywordLocation), members.at(-1) ?? ""], members, context);
        key = place.key;
        path = place.path;
      } else if (parent && (parent.keyword === "items" || parent.keyword === "propertyNames")) {
        const place = follow(segmentsOf(parent.keywordLocation), members, context);
        key = place.key;
        path = place.path;
      }
      placed.push({
        issue: {
          instancePath: pointerOf(path),
          keyword: "false schema",
          params: {},
          message: "boolean schema is false",
        },
        key: [...key, 0, 0],
      });
      continue;
    }
    skipFalse = false;
    const segments = segmentsOf(unit.keywordLocation);
    // dependentRequired's location is misspelt (`dependantRequired`); the keyword itself is right.
    const place = follow(segments.slice(0, -1), members, context);
    const key = [...place.key, rank(place.schema, unit.keyword, place.value)];
    previous = { unit, key };
    if (
      context.all &&
      unit.keyword === "contains" &&
      unit.error === "Array does not contain item matching schema." &&
      Array.isArray(place.value)
    ) {
      // cfworker drops the items' errors when none matched; Ajv reports them before its summary.
      const items = place.value.map(
        (item, index) =>
          validate(
            item,
            place.schema.contains as Schema,
            "2020-12",
            context.lookup,
            false,
            null,
            `${unit.instanceLocation}/${index}`,
            unit.keywordLocation,
          ).errors,
      );
      queue.splice(n + 1, 0, ...items.flat());
    }
    const converted = convert(unit, place, queue[n + 1]);
    if ((unit.keyword === "additionalProperties" || unit.keyword === "unevaluatedProperties") && converted) {
      skipFalse = true;
    }
    if ((unit.keyword === "items" || unit.keyword === "unevaluatedItems") && place.schema[unit.keyword] === false) {
      skipFalse = true;
      if (itemsRefused.has(unit.instanceLocation)) {
        continue;
      }
      itemsRefused.add(unit.instanceLocation);
    }
    if (converted) {
      placed.push({ issue: converted.issue, key: [...key, ...converted.tail] });
    }
  }
  // Stable: what the keys do not order stays in cfworker's order, which is Ajv's within one keyword.
  placed.sort((a, b) => compareKeys(a.key, b.key));
  return placed.map((entry) => entry.issue);
}

function compareKeys(a: readonly number[], b: readonly number[]): number {
  const length = Math.min(a.length, b.length);
  for (let i = 0; i < length; i++) {
    const difference = (a[i] as number) - (b[i] as number);
    if (difference !== 0) {
      return difference;
    }
  }
  return a.length - b.length;
}

/** The first error Ajv would stop at, with no all-errors pass: the composites' summaries are not it. */
function firstOnly(issues: readonly SchemaIssue[]): readonly SchemaIssue[] {
  const first = issues.find((issue) => !COMPOSITE.has(issue.keyword));
  return first ? [first] : issues;
}

/** A lone surrogate: JSON allows one in a property name, and cfworker's `encodeURI` of that name throws. */
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;

/** A copy of a value whose property names are well-formed (U+FFFD for each lone surrogate). */
function wellFormedNames(value: unknown): unknown {
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

/** A schema's validator: cfworker's first-error pass, and the all-errors pass only for invalid values. */
class CfworkerSchemaValidator implements SchemaValidator {
  constructor(
    private readonly schema: Schema,
    private readonly lookup: Lookup,
  ) {}

  errors(value: unknown, all = true): readonly SchemaIssue[] | undefined {
    const first = this.check(value, true);
    if (first.valid) {
      return undefined;
    }
    if (!all) {
      return firstOnly(toIssues(first.errors, { root: this.schema, lookup: this.lookup, input: first.checked, all }));
    }
    const full = this.check(first.checked, false);
    return toIssues(full.errors, { root: this.schema, lookup: this.lookup, input: full.checked, all });
  }

  /** cfworker's answer for `value`, and the value it checked (see {@link wellFormedNames}). */
  private check(value: unknown, shortCircuit: boolean): ValidationResult & { checked: unknown } {
    try {
      return { ...validate(value, this.schema, "2020-12", this.lookup, shortCircuit), checked: value };
    } catch (error) {
      if (!(error instanceof URIError)) {
        throw error;
      }
      // Only the names' paths change (a name with a lone surrogate is as valid as before, bar a pattern on it).
      const checked = wellFormedNames(value);
      return { ...validate(checked, this.schema, "2020-12", this.lookup, shortCircuit), checked };
    }
  }
}

/** Throws, as Ajv's compile does, for a schema that is not a valid draft 2020-12 JSON Schema. */
function checkSchema(schema: unknown): void {
  const { root, lookup } = metaSchemas();
  const result = validate(schema, root, "2020-12", lookup, true);
  if (!result.valid) {
    const issues = firstOnly(toIssues(result.errors, { root, lookup, input: schema, all: false }));
    throw new Error(
      `schema is invalid: ${issues.map((issue) => `data${issue.instancePath} ${issue.message}`).join(", ")}`,
    );
  }
  // Ajv compiles every pattern with the `u` flag and throws its SyntaxError: so does this.
  for (const [key, value] of keywordsOf(schema)) {
    if (key === "pattern" && typeof value === "string") {
      new RegExp(value, "u");
    }
    if (key === "patternProperties" && typeof value === "object" && value !== null) {
      for (const pattern of Object.keys(value)) {
        new RegExp(pattern, "u");
      }
    }
  }
}

/**
 * cfworker's validators (draft 2020-12, every error on the all-errors pass), with Ajv's string formats and meta-schema
 * check, and Ajv's errors. Number formats (`int32`, `int64`, `float`, `double`) are not among its formats: cfworker
 * checks formats of strings only, so a schema naming one is refused at start-up instead of left unchecked.
 */
export function createCfworkerValidators(): SchemaValidators {
  addFormats();
  return {
    name: "cfworker",
    formats: new Set(STRING_FORMATS.keys()),
    compile(schema) {
      checkSchema(schema);
      const copy = copySchema(schema, (key, value) =>
        key === "format" && typeof value === "string" && STRING_FORMATS.has(value)
          ? [[key, FORMAT_PREFIX + value]]
          : undefined,
      ) as Schema;
      return new CfworkerSchemaValidator(copy, dereference(copy));
    },
  };
}
