/** JSON Schemas across the bridge: OXP definitions to MCP tool schemas, and MCP tool schemas to self-contained OXP ones. */

/** A JSON Schema object. */
export type JsonSchema = Record<string, unknown>;

const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value);

/** A deep copy of JSON data. */
const copy = <T>(value: T): T => structuredClone(value);

/** True for a schema whose values are JSON objects: `type: "object"` (alone or with `null` left out). */
export function isObjectSchema(schema: unknown): schema is JsonSchema {
  return isObject(schema) && schema.type === "object";
}

/**
 * The MCP `inputSchema` of an OXP input_schema. MCP requires `type: "object"` at the top; OXP allows
 * `{}` for "no input", so it is added when missing. `$schema` is dropped: MCP clients compile schemas
 * with their own draft, and a `$schema` they do not know fails the compile.
 */
export function toMcpInputSchema(inputSchema: unknown): JsonSchema & { type: "object" } {
  const schema = isObject(inputSchema) ? copy(inputSchema) : {};
  delete schema.$schema;
  return { ...schema, type: "object" };
}

/** How an OXP tool's value becomes MCP `structuredContent`. */
export interface McpOutput {
  /** The MCP `outputSchema`, or none when the tool returns nothing. */
  outputSchema: (JsonSchema & { type: "object" }) | undefined;
  /** True when the value is wrapped as `{ value }`, because its schema is not an object schema. */
  wrapped: boolean;
}

/**
 * The MCP output of an OXP output_schema. MCP's `structuredContent` must be an object matching
 * `outputSchema`, so an object schema is kept as it is, any other schema (`{}` included: any JSON
 * value) is declared as `{ value: <schema> }` and the value wrapped the same way, and `null` (the
 * tool returns nothing) declares no output schema at all.
 */
export function toMcpOutput(outputSchema: unknown): McpOutput {
  if (outputSchema === null || outputSchema === undefined) {
    return { outputSchema: undefined, wrapped: false };
  }
  const schema = isObject(outputSchema) ? copy(outputSchema) : {};
  delete schema.$schema;
  if (isObjectSchema(schema)) {
    return { outputSchema: schema as JsonSchema & { type: "object" }, wrapped: false };
  }
  return {
    outputSchema: { type: "object", properties: { value: schema }, required: ["value"], additionalProperties: false },
    wrapped: true,
  };
}

/** Why an MCP schema cannot be served over OXP. */
export class SchemaConversionError extends Error {
  override name = "SchemaConversionError";
}

/** A schema whose inlined form would pass {@link InlineOptions.maxChars}: its inlining stopped there. */
export class SchemaTooLargeError extends SchemaConversionError {
  override name = "SchemaTooLargeError";
  constructor(
    /** The bound it passed, in characters of JSON. */
    readonly maxChars: number,
  ) {
    super(`it is too large (with its $refs inlined, more than ${maxChars} characters of JSON)`);
  }
}

/** Bounds on what {@link inlineRefs} builds. */
export interface InlineOptions {
  /**
   * The most characters of JSON (as `JSON.stringify` writes it) the inlined schema may take. Default
   * {@link DEFAULT_MAX_SCHEMA_CHARS}.
   */
  maxChars?: number;
  /**
   * Counts the characters built into `chars`, those of a schema refused part way included: one meter given to
   * several calls adds up what they cost together, to bound them together.
   */
  meter?: { chars: number };
}

/**
 * The default of {@link InlineOptions.maxChars}: 256 KiB of JSON, several times the largest schemas real MCP servers
 * publish (tens of KB). A schema's size is also the OXP server's cost to start: it compiles each schema with Ajv, at
 * about 10 ms per KB.
 */
export const DEFAULT_MAX_SCHEMA_CHARS = 256 * 1024;

/**
 * How deep (objects and arrays) an inlined schema may nest. No real schema comes near it; past it the recursive
 * walks that read schemas (this one, the OXP server's checks, `JSON.stringify`) would run out of stack.
 */
export const MAX_SCHEMA_DEPTH = 256;

/** Keywords whose values are data, not schemas: nothing inside them is a `$ref`. */
const DATA_KEYWORDS = new Set(["enum", "const", "examples", "default"]);
/** Keywords whose values map names to schemas. */
const NAME_MAPS = new Set(["properties", "patternProperties", "dependentSchemas", "$defs", "definitions"]);

/** A JSON Pointer's segment decoded; undefined for a broken percent-encoding, which names nothing. */
function decodeSegment(raw: string): string | undefined {
  try {
    return decodeURIComponent(raw).replace(/~1/g, "/").replace(/~0/g, "~");
  } catch {
    return undefined;
  }
}

/** The schema a local JSON Pointer (`#/$defs/Address`) names in `root`, or undefined. */
function resolvePointer(root: JsonSchema, ref: string): unknown {
  if (ref === "#") {
    return root;
  }
  if (!ref.startsWith("#/")) {
    return undefined;
  }
  let node: unknown = root;
  for (const raw of ref.slice(2).split("/")) {
    const key = decodeSegment(raw);
    if (key === undefined || (!isObject(node) && !Array.isArray(node)) || !Object.hasOwn(node, key)) {
      return undefined;
    }
    node = (node as Record<string, unknown>)[key];
  }
  return node;
}

/**
 * `schema` with every local `$ref` replaced by a copy of what it points to, and `$defs`/`definitions`
 * removed. OXP definitions must be self-contained. A recursive reference (a tree, a linked list) has
 * no finite inline form, and a reference to another document cannot be fetched safely: both throw a
 * {@link SchemaConversionError}, as does `$dynamicRef`. References that each point twice at the next
 * make a copy per path, so the output can be exponentially larger than the input: it is counted as it
 * is built, and past `maxChars` inlining stops with a {@link SchemaTooLargeError}, its cost bounded by
 * the bound, not by the output it would have made. A schema nested deeper than {@link MAX_SCHEMA_DEPTH}
 * is refused too.
 *
 * @example
 * inlineRefs({ properties: { to: { $ref: "#/$defs/A" } }, $defs: { A: { type: "string" } } });
 * // { properties: { to: { type: "string" } } }
 */
export function inlineRefs(schema: JsonSchema, options: InlineOptions = {}): JsonSchema {
  const maxChars = options.maxChars ?? DEFAULT_MAX_SCHEMA_CHARS;
  if (!(Number.isInteger(maxChars) && maxChars > 0)) {
    throw new RangeError("maxChars must be a positive whole number of characters");
  }
  const meter = options.meter;
  // The characters of JSON written so far: braces, brackets, commas, keys with their colon, and values.
  let chars = 0;
  const charge = (count: number) => {
    chars += count;
    if (meter) {
      meter.chars += count;
    }
    if (chars > maxChars) {
      throw new SchemaTooLargeError(maxChars);
    }
  };
  const enter = (depth: number) => {
    if (depth > MAX_SCHEMA_DEPTH) {
      throw new SchemaConversionError(`it nests deeper than ${MAX_SCHEMA_DEPTH} levels`);
    }
  };
  /** A primitive as JSON, counted. */
  const scalar = (value: unknown): unknown => {
    charge(JSON.stringify(value)?.length ?? 0);
    return value;
  };
  /** Items written as an array, each made by `make`, counted. */
  const array = (items: readonly unknown[], make: (item: unknown) => unknown): unknown[] => {
    charge(1);
    const out = items.map((item, i) => {
      charge(i === 0 ? 0 : 1);
      return make(item);
    });
    charge(1);
    return out;
  };
  /** Members written as an object, each value made by `make`, counted. */
  const object = (entries: [string, unknown][], make: (key: string, value: unknown) => unknown): JsonSchema => {
    const members: [string, unknown][] = [];
    charge(1);
    for (const [key, value] of entries) {
      charge((members.length === 0 ? 0 : 1) + JSON.stringify(key).length + 1);
      members.push([key, make(key, value)]);
    }
    charge(1);
    // fromEntries, not assignment: a member named `__proto__` stays a member.
    return Object.fromEntries(members);
  };
  /** A copy of data (an `enum`, a `default`...), counted: copied as it is, a `$ref` in it included. */
  const data = (value: unknown, depth: number): unknown => {
    if (typeof value !== "object" || value === null) {
      return scalar(value);
    }
    enter(depth);
    return Array.isArray(value)
      ? array(value, (item) => data(item, depth + 1))
      : object(Object.entries(value), (_key, item) => data(item, depth + 1));
  };
  const visit = (node: unknown, stack: readonly string[], depth: number): unknown => {
    if (typeof node !== "object" || node === null) {
      return scalar(node);
    }
    enter(depth);
    if (Array.isArray(node)) {
      return array(node, (item) => visit(item, stack, depth + 1));
    }
    if ("$dynamicRef" in node || "$recursiveRef" in node) {
      throw new SchemaConversionError("it uses $dynamicRef, which has no self-contained form");
    }
    let base = node as Record<string, unknown>;
    let nextStack = stack;
    if (typeof base.$ref === "string") {
      const ref = base.$ref;
      if (stack.includes(ref)) {
        throw new SchemaConversionError(`it is recursive ($ref ${ref})`);
      }
      const target = resolvePointer(schema, ref);
      if (!isObject(target)) {
        throw new SchemaConversionError(`its $ref ${ref} is not a local definition`);
      }
      const { $ref: _ref, ...siblings } = base;
      // A $ref beside other keywords means both apply (2019-09 on): the target's keywords, then the siblings'.
      base = { ...target, ...siblings };
      nextStack = [...stack, ref];
      // A reference to a reference: each hop counts as a level, so a long chain of them ends at the depth bound.
      if (typeof base.$ref === "string") {
        return visit(base, nextStack, depth + 1);
      }
    }
    const kept = Object.entries(base).filter(([key]) => key !== "$defs" && key !== "definitions");
    return object(kept, (key, value) => {
      if (DATA_KEYWORDS.has(key)) {
        return data(value, depth + 1);
      }
      if (NAME_MAPS.has(key) && isObject(value)) {
        enter(depth + 1);
        return object(Object.entries(value), (_name, sub) => visit(sub, nextStack, depth + 2));
      }
      return visit(value, nextStack, depth + 1);
    });
  };
  return visit(schema, [], 1) as JsonSchema;
}

/** Drops the root's `$schema` and `$id`: OXP servers compile with draft 2020-12, and ids could collide. */
function dropRootMeta(schema: JsonSchema): JsonSchema {
  const { $schema: _schema, $id: _id, ...rest } = schema;
  return rest;
}

/**
 * The OXP input_schema of an MCP `inputSchema`: self-contained (see {@link inlineRefs}), `type:
 * "object"`, and a description on every top-level property (OXP requires one; a generic one naming
 * the parameter is filled in where the MCP server gave none). Throws a {@link SchemaConversionError}
 * when the schema cannot be expressed, a {@link SchemaTooLargeError} when it is too large for `options`.
 */
export function toOxpInputSchema(inputSchema: unknown, options: InlineOptions = {}): JsonSchema {
  if (!isObject(inputSchema)) {
    return { type: "object" };
  }
  const schema = dropRootMeta(inlineRefs(inputSchema, options));
  if (schema.type !== undefined && schema.type !== "object") {
    throw new SchemaConversionError(`its input is not an object (type ${JSON.stringify(schema.type)})`);
  }
  schema.type = "object";
  if (isObject(schema.properties)) {
    schema.properties = Object.fromEntries(
      Object.entries(schema.properties).map(([name, property]) => {
        const described = isObject(property) ? property : {};
        const description =
          typeof described.description === "string" && described.description.trim() !== ""
            ? described.description
            : `The ${name} parameter.`;
        return [name, { ...described, description }];
      }),
    );
  }
  return schema;
}

/**
 * The OXP output_schema of an MCP `outputSchema`: the schema made self-contained, or `{}` (any value)
 * when there is none or it cannot be made self-contained (recursive, remote, too large for `options`: the
 * value is then simply not described).
 */
export function toOxpOutputSchema(outputSchema: unknown, options: InlineOptions = {}): JsonSchema {
  if (!isObject(outputSchema)) {
    return {};
  }
  try {
    return dropRootMeta(inlineRefs(outputSchema, options));
  } catch (error) {
    if (error instanceof SchemaConversionError) {
      return {};
    }
    throw error;
  }
}
