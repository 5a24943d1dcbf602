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

/** Keywords whose values are data, not schemas: nothing inside them is a `$ref`. */
const DATA_KEYWORDS = new Set(["enum", "const", "examples", "default"]);
/** Keywords whose values map names to schemas. */
const NAME_MAPS = new Set(["properties", "patternProperties", "dependentSchemas", "$defs", "definitions"]);

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
    const key = decodeURIComponent(raw).replace(/~1/g, "/").replace(/~0/g, "~");
    if (!isObject(node) && !Array.isArray(node)) {
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
 * {@link SchemaConversionError}, as does `$dynamicRef`.
 */
export function inlineRefs(schema: JsonSchema): JsonSchema {
  const visit = (node: unknown, stack: readonly string[]): unknown => {
    if (Array.isArray(node)) {
      return node.map((item) => visit(item, stack));
    }
    if (!isObject(node)) {
      return node;
    }
    if ("$dynamicRef" in node || "$recursiveRef" in node) {
      throw new SchemaConversionError("it uses $dynamicRef, which has no self-contained form");
    }
    let base: Record<string, unknown> = node;
    let nextStack = stack;
    if (typeof node.$ref === "string") {
      const ref = node.$ref;
      if (stack.includes(ref)) {
        throw new SchemaConversionError(`it is recursive ($ref ${ref})`);
      }
      const target = resolvePointer(schema, ref);
      if (!isObject(target)) {
        throw new SchemaConversionError(`its $ref ${ref} is not a local definition`);
      }
      const { $ref: _ref, ...siblings } = node;
      // A $ref beside other keywords means both apply (2019-09 on): the target's keywords, then the siblings'.
      base = { ...target, ...siblings };
      nextStack = [...stack, ref];
      if (typeof base.$ref === "string") {
        return visit(base, nextStack);
      }
    }
    const out: Record<string, unknown> = {};
    for (const [key, value] of Object.entries(base)) {
      if (key === "$defs" || key === "definitions") {
        continue;
      }
      if (DATA_KEYWORDS.has(key)) {
        out[key] = copy(value);
      } else if (NAME_MAPS.has(key) && isObject(value)) {
        out[key] = Object.fromEntries(Object.entries(value).map(([name, sub]) => [name, visit(sub, nextStack)]));
      } else {
        out[key] = visit(value, nextStack);
      }
    }
    return out;
  };
  return visit(schema, []) as JsonSchema;
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
 * when the schema cannot be expressed.
 */
export function toOxpInputSchema(inputSchema: unknown): JsonSchema {
  if (!isObject(inputSchema)) {
    return { type: "object" };
  }
  const schema = dropRootMeta(inlineRefs(inputSchema));
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
 * when there is none or it cannot be made self-contained (the value is then simply not described).
 */
export function toOxpOutputSchema(outputSchema: unknown): JsonSchema {
  if (!isObject(outputSchema)) {
    return {};
  }
  try {
    return dropRootMeta(inlineRefs(outputSchema));
  } catch (error) {
    if (error instanceof SchemaConversionError) {
      return {};
    }
    throw error;
  }
}
