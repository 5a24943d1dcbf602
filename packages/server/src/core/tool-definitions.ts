/** Turns tools into ToolDefinitions and refuses, at start-up, any definition that breaks the protocol's rules. */
import {
  formatSchemaErrors,
  formatToolId,
  type ToolDefinition,
  unwrapInputSchema,
  validateToolDefinition,
} from "@otc/types";
import { ServerConfigError } from "./errors.js";
import type { SchemaValidator, SchemaValidators } from "./input-validation.js";
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
      if (found) {
        return found;
      }
    }
    return undefined;
  }
  if (typeof schema !== "object" || schema === null) {
    return undefined;
  }
  for (const [key, value] of Object.entries(schema)) {
    if (matches(key, value, data)) {
      return `${path}/${key}`;
    }
    if (data || DATA.has(key)) {
      const found = findKeyword(value, matches, `${path}/${key}`, true);
      if (found) {
        return found;
      }
      continue;
    }
    const children =
      NAME_MAPS.has(key) && typeof value === "object" && value !== null ? Object.entries(value) : [["", value]];
    for (const [name, sub] of children) {
      const found = findKeyword(sub, matches, name === "" ? `${path}/${key}` : `${path}/${key}/${name}`);
      if (found) {
        return found;
      }
    }
  }
  return undefined;
}

/**
 * The ToolDefinition of a tool with every extension's fields: its `annotations` and `deprecation_message` (the
 * annotations extension) and `required_scopes` (oauth) where it has them. {@link listedForm} gives the form a
 * request asked for, OXP 1.0's when it asked for none.
 */
export function toToolDefinition(tool: Tool): ToolDefinition {
  const definition: ToolDefinition = {
    id: formatToolId({ toolkit: tool.toolkit, tool: tool.name, version: tool.version }),
    name: `${tool.toolkit}_${tool.name}`,
    description: tool.description,
    version: tool.version,
    input_schema: unwrapInputSchema(tool.inputSchema) as ToolDefinition["input_schema"],
    output_schema: tool.outputSchema as ToolDefinition["output_schema"],
  };
  if (tool.requirements !== undefined) {
    definition.requirements = tool.requirements;
  }
  if (tool.annotations !== undefined) {
    definition.annotations = tool.annotations;
  }
  if (tool.deprecationMessage !== undefined) {
    definition.deprecation_message = tool.deprecationMessage;
  }
  if (tool.requiredScopes !== undefined) {
    // A copy: the author's array is theirs to change, and the listed one is checked against the spec.
    definition.required_scopes = [...tool.requiredScopes] as ToolDefinition["required_scopes"];
  }
  return definition;
}

/** Which extensions' fields a tool list carries: the annotations extension's (9.2), oauth's `required_scopes` (9.6). */
export interface ListForm {
  annotations?: boolean;
  scopes?: boolean;
}

/** A definition in the form a request asked for: without the fields of the extensions it did not ask for. */
export function listedForm(definition: ToolDefinition, form: ListForm): ToolDefinition {
  const dropAnnotations =
    !form.annotations && (definition.annotations !== undefined || definition.deprecation_message !== undefined);
  const dropScopes = !form.scopes && definition.required_scopes !== undefined;
  if (!dropAnnotations && !dropScopes) {
    return definition;
  }
  const listed = { ...definition };
  if (dropAnnotations) {
    delete listed.annotations;
    delete listed.deprecation_message;
  }
  if (dropScopes) {
    delete listed.required_scopes;
  }
  return listed;
}

/**
 * The first way a ToolDefinition breaks the spec's schema, if any: by the precompiled validator, which needs no
 * code generated at run time (the spec's schemas are fixed, so they are compiled when the spec changes).
 */
function validateAgainstSpec(definition: ToolDefinition): string | undefined {
  if (validateToolDefinition(definition)) {
    return undefined;
  }
  return formatSchemaErrors(validateToolDefinition.errors, { root: "/" });
}

/** What to tell the author of a tool whose input schema a library wrote, for each rule of section 6 it may break. */
export interface InputSchemaHints {
  /** For a `$ref` or `$defs`. */
  selfContained: string;
  /** For a top-level property without a description. */
  description: string;
}

/** The top-level properties of an input schema that have no description (the spec's schema requires one each). */
function undescribedProperties(schema: unknown): string[] {
  const properties = (schema as { properties?: unknown } | null)?.properties;
  if (typeof properties !== "object" || properties === null) {
    return [];
  }
  return Object.entries(properties)
    .filter(([, property]) => typeof (property as { description?: unknown } | null)?.description !== "string")
    .map(([name]) => name);
}

/** A definition's schemas, compiled; `undefined` for a `null` output schema. */
export interface CompiledSchemas {
  input: SchemaValidator;
  output: SchemaValidator | undefined;
}

/** What {@link checkToolDefinition} needs besides the definition. */
export interface DefinitionCheckOptions {
  /** The tool's toolkit, as its author gave it. */
  toolkit: string;
  /** The validators its schemas are compiled with. */
  validators: SchemaValidators;
  /**
   * Set when a schema library validates the tool's input (a Standard Schema tool), with `hints` when the library
   * also wrote the JSON Schema it is listed with, in that library's terms.
   */
  library?: { hints?: InputSchemaHints | undefined } | undefined;
}

/**
 * Checks one tool's definition against docs/protocol.md section 6 and the spec's ToolDefinition schema, and compiles
 * its schemas with `validators`; throws a {@link ServerConfigError} naming the tool and the rule it breaks.
 */
export function checkToolDefinition(
  definition: ToolDefinition,
  { toolkit, validators, library }: DefinitionCheckOptions,
): CompiledSchemas {
  const hints = library?.hints;
  const refuse = (rule: string): never => {
    throw new ServerConfigError(`Tool '${definition.id}' is refused: ${rule}`);
  };
  // The spec's ToolId pattern (checked below) refuses a bad toolkit too, but this names the field to fix.
  if (!/^[A-Za-z0-9_]+$/.test(toolkit)) {
    refuse("the toolkit must be letters, digits and '_'");
  }
  if (hints) {
    // A schema library's author did not write the JSON Schema: say what in their own code made it break the rules.
    const reference = findKeyword(definition.input_schema, (key, _value, data) =>
      (data ? REFERENCES : FORBIDDEN).has(key),
    );
    if (reference) {
      refuse(`input_schema must be self-contained, but has ${reference}: ${hints.selfContained}`);
    }
    const undescribed = undescribedProperties(definition.input_schema);
    if (undescribed.length > 0) {
      refuse(
        `every top-level property of input_schema needs a description, and ${undescribed.map((name) => JSON.stringify(name)).join(", ")} ${undescribed.length === 1 ? "has" : "have"} none: ${hints.description}`,
      );
    }
  }
  const specProblem = validateAgainstSpec(definition);
  if (specProblem) {
    refuse(`it does not match the ToolDefinition schema (${specProblem})`);
  }
  if (!definition.id.endsWith(`@${definition.version}`)) {
    refuse("its id must end in '@' and its version");
  }
  const compiled: Partial<Record<"input_schema" | "output_schema", SchemaValidator>> = {};
  for (const [field, schema] of [
    ["input_schema", definition.input_schema],
    ["output_schema", definition.output_schema],
  ] as const) {
    const forbidden = findKeyword(schema, (key, _value, data) => (data ? REFERENCES : FORBIDDEN).has(key));
    if (forbidden) {
      refuse(`${field} must be self-contained, but has ${forbidden}`);
    }
    const extension = findKeyword(schema, (key, _value, data) => !data && CODEGEN_EXTENSION.test(key));
    if (extension) {
      refuse(`${field} uses a code generator's extension keyword, which no server publishes, at ${extension}`);
    }
    if (schema === null) {
      continue;
    }
    const unknownFormat = (key: string, value: unknown) =>
      key === "format" && typeof value === "string" && !validators.formats.has(value);
    // A schema library checks its own formats (zod's `cuid`, `nanoid`...): its input schema is compiled only to
    // prove it is a JSON Schema, so without them (Ajv would warn of each on the console).
    const libraryChecked = library !== undefined && field === "input_schema";
    // Both validators would skip an unknown format silently; a tool author expects it checked.
    const format = !libraryChecked && findKeyword(schema, (key, value, data) => !data && unknownFormat(key, value));
    if (format) {
      refuse(`${field} uses a format this server does not know, at ${format}`);
    }
    try {
      compiled[field] = validators.compile(
        libraryChecked
          ? (JSON.parse(
              JSON.stringify(schema, (key, value) => (unknownFormat(key, value) ? undefined : value)),
            ) as object)
          : schema,
      );
    } catch (error) {
      refuse(`${field} is not a valid JSON Schema (${error instanceof Error ? error.message : String(error)})`);
    }
  }
  return { input: compiled.input_schema as SchemaValidator, output: compiled.output_schema };
}
