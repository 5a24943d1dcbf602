/** Turns tools into ToolDefinitions and refuses, at start-up, any definition that breaks the protocol's rules. */
import {
  allSchemas,
  formatSchemaErrors,
  formatToolId,
  type ToolDefinition,
  ToolDefinitionSchema,
  unwrapInputSchema,
} from "@otc/types";
import { createAjv } from "@otc/types/ajv";
import type { Ajv2020 } from "ajv/dist/2020.js";
import { ServerConfigError } from "./errors.js";
import type { Tool } from "./tool.js";

/** Keywords whose values map names to subschemas: their keys are names, not keywords. */
const NAME_MAPS = new Set(["properties", "patternProperties", "dependentSchemas"]);
/** Keywords whose values are data, not subschemas. */
const DATA = new Set(["enum", "const", "examples", "default"]);
/** References: refused in data too, because a reference resolver (a code generator's, say) follows them anywhere. */
const REFERENCES = new Set(["$ref", "$dynamicRef", "$recursiveRef"]);
const FORBIDDEN = new Set([...REFERENCES, "$defs", "definitions"]);
/** json-schema-to-typescript's extensions (`tsType`, `tsEnumNames`...): it copies some into the code it writes. */
const CODEGEN_EXTENSION = /^ts[A-Z]/;

/**
 * The path of the first member of a schema (at any depth) for which `matches` holds. `data` is true for the
 * members of `enum`, `const`, `examples` and `default` values, where every key is a member, never a keyword.
 */
function findKeyword(
  schema: unknown,
  matches: (key: string, value: unknown, data: boolean) => boolean,
  path = "",
  data = false,
): string | undefined {
  if (Array.isArray(schema)) {
    for (const [i, item] of schema.entries()) {
      const found = findKeyword(item, matches, `${path}/${i}`, data);
      if (found) return found;
    }
    return undefined;
  }
  if (typeof schema !== "object" || schema === null) return undefined;
  for (const [key, value] of Object.entries(schema)) {
    if (matches(key, value, data)) return `${path}/${key}`;
    if (data || DATA.has(key)) {
      const found = findKeyword(value, matches, `${path}/${key}`, true);
      if (found) return found;
      continue;
    }
    const children =
      NAME_MAPS.has(key) && typeof value === "object" && value !== null ? Object.entries(value) : [["", value]];
    for (const [name, sub] of children) {
      const found = findKeyword(sub, matches, name === "" ? `${path}/${key}` : `${path}/${key}/${name}`);
      if (found) return found;
    }
  }
  return undefined;
}

/** The ToolDefinition a tool is listed with. */
export function toToolDefinition(tool: Tool): ToolDefinition {
  const definition: ToolDefinition = {
    id: formatToolId({ toolkit: tool.toolkit, tool: tool.name, version: tool.version }),
    name: `${tool.toolkit}_${tool.name}`,
    description: tool.description,
    version: tool.version,
    input_schema: unwrapInputSchema(tool.inputSchema) as ToolDefinition["input_schema"],
    output_schema: tool.outputSchema as ToolDefinition["output_schema"],
  };
  if (tool.requirements !== undefined) definition.requirements = tool.requirements;
  return definition;
}

let definitionValidator: ReturnType<Ajv2020["compile"]> | undefined;

/** Validates a ToolDefinition against the spec's schema (compiled once per process). */
function validateAgainstSpec(definition: ToolDefinition): string | undefined {
  if (!definitionValidator) {
    definitionValidator = createAjv({ allErrors: true, schemas: allSchemas }).getSchema(ToolDefinitionSchema.$id);
  }
  if (!definitionValidator || definitionValidator(definition)) return undefined;
  return formatSchemaErrors(definitionValidator.errors, { root: "/" });
}

/**
 * Checks one tool's definition against docs/protocol.md section 6 and the spec's ToolDefinition schema; throws a
 * {@link ServerConfigError} naming the tool and the rule it breaks.
 */
export function checkToolDefinition(
  tool: Pick<Tool, "toolkit">,
  definition: ToolDefinition,
  compileSchema: (schema: object) => void,
  knownFormats: ReadonlySet<string>,
): void {
  const refuse = (rule: string): never => {
    throw new ServerConfigError(`Tool '${definition.id}' is refused: ${rule}`);
  };
  // The spec's ToolId pattern (checked below) refuses a bad toolkit too, but this names the field to fix.
  if (!/^[A-Za-z0-9_]+$/.test(tool.toolkit)) refuse("the toolkit must be letters, digits and '_'");
  const specProblem = validateAgainstSpec(definition);
  if (specProblem) refuse(`it does not match the ToolDefinition schema (${specProblem})`);
  if (!definition.id.endsWith(`@${definition.version}`)) refuse("its id must end in '@' and its version");
  for (const [field, schema] of [
    ["input_schema", definition.input_schema],
    ["output_schema", definition.output_schema],
  ] as const) {
    const forbidden = findKeyword(schema, (key, _value, data) => (data ? REFERENCES : FORBIDDEN).has(key));
    if (forbidden) refuse(`${field} must be self-contained, but has ${forbidden}`);
    const extension = findKeyword(schema, (key, _value, data) => !data && CODEGEN_EXTENSION.test(key));
    if (extension)
      refuse(`${field} uses a code generator's extension keyword, which no server publishes, at ${extension}`);
    if (schema === null) continue;
    // Ajv would skip an unknown format silently; a tool author expects it checked.
    const format = findKeyword(
      schema,
      (key, value, data) => !data && key === "format" && typeof value === "string" && !knownFormats.has(value),
    );
    if (format) refuse(`${field} uses a format this server does not know, at ${format}`);
    try {
      compileSchema(schema);
    } catch (error) {
      refuse(`${field} is not a valid JSON Schema (${error instanceof Error ? error.message : String(error)})`);
    }
  }
}
