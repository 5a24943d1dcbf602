/** `otc codegen`: typed bindings (input and output types per tool, and typed wrappers) from a tool catalog. */
import { parseToolId, type ToolDefinition } from "@otc/types";
import { compile } from "json-schema-to-typescript";

type Schema = Record<string, unknown>;

/** The project's biome.json line width: bindings are laid out as Biome lays them out, so `biome ci` passes on them. */
const LINE_WIDTH = 120;

/**
 * What an object without properties becomes. `{}` would accept any value but null, and Biome refuses it
 * (noBannedTypes, and noEmptyInterface for `interface X {}`).
 */
const NO_PROPERTIES = "Record<string, never>";

/** A TypeScript name for a tool id: `Calculator.Add@1.0.0` -> `CalculatorAddV1_0_0`. */
export function typeNameOf(toolId: string): string {
  // A catalog file is not checked against the spec: an id that is no tool id is named whole.
  const { qualifiedName, version = "" } = parseToolId(toolId) ?? { qualifiedName: toolId };
  const base = qualifiedName
    .split(/[._]/)
    .map((part) => part.charAt(0).toUpperCase() + part.slice(1))
    .join("");
  return `${base}V${version.replaceAll(".", "_")}`;
}

const isSchema = (value: unknown): value is Schema =>
  typeof value === "object" && value !== null && !Array.isArray(value);

/** Keywords whose value is one schema, a list of schemas, or a map of names to schemas (the rest is data). */
const ONE_SCHEMA = new Set([
  "items",
  "additionalItems",
  "additionalProperties",
  "unevaluatedItems",
  "unevaluatedProperties",
  "contains",
  "propertyNames",
  "not",
  "if",
  "then",
  "else",
]);
const SCHEMA_LIST = new Set(["anyOf", "oneOf", "allOf", "prefixItems"]);
const SCHEMA_MAP = new Set(["properties", "patternProperties", "$defs", "definitions", "dependentSchemas"]);

/** Keywords that leave an object schema without any property when nothing else is said. */
const ANNOTATIONS = new Set([
  "type",
  "description",
  "$comment",
  "$id",
  "$schema",
  "examples",
  "default",
  "deprecated",
  "readOnly",
  "writeOnly",
  "minProperties",
  "maxProperties",
]);

/** An object schema that allows no property: `additionalProperties` absent counts as closed, as in `typeFor`. */
function allowsNoProperty(schema: Schema): boolean {
  if (schema.type !== "object") return false;
  return Object.entries(schema).every(
    ([key, value]) =>
      ANNOTATIONS.has(key) ||
      (key === "properties" && isSchema(value) && Object.keys(value).length === 0) ||
      (key === "required" && Array.isArray(value) && value.length === 0) ||
      ((key === "additionalProperties" || key === "unevaluatedProperties") && value === false),
  );
}

/**
 * A schema ready for json-schema-to-typescript: without `title`s, so nested types are written inline
 * (titles from different tools could collide), and with objects that allow no property typed as
 * {@link NO_PROPERTIES}. Only schema positions are rewritten: `default`, `const` or `enum` data stay as they are.
 */
function prepare(schema: Schema): Schema {
  const out: Schema = {};
  for (const [key, value] of Object.entries(schema)) {
    if (key === "title") continue;
    if (ONE_SCHEMA.has(key) && isSchema(value)) out[key] = prepare(value);
    else if ((SCHEMA_LIST.has(key) || key === "items") && Array.isArray(value))
      out[key] = value.map((item) => (isSchema(item) ? prepare(item) : item));
    else if (SCHEMA_MAP.has(key) && isSchema(value))
      out[key] = Object.fromEntries(
        Object.entries(value).map(([name, item]) => [name, isSchema(item) ? prepare(item) : item]),
      );
    else out[key] = value;
  }
  if (allowsNoProperty(out)) out.tsType = NO_PROPERTIES;
  return out;
}

async function typeFor(schema: Schema, name: string, input: boolean): Promise<string> {
  const prepared = prepare(input && schema.type === undefined ? { type: "object", ...schema } : schema);
  if (!input && Object.keys(prepared).length === 0) return `export type ${name} = unknown;\n`;
  const code = await compile(prepared as Parameters<typeof compile>[0], name, {
    bannerComment: "",
    additionalProperties: false,
    declareExternallyReferenced: true,
    format: true,
    unknownAny: true,
    strictIndexSignatures: false,
    // Prettier with Biome's settings (see biome.json); json-schema-to-typescript's defaults differ.
    style: {
      bracketSpacing: true,
      printWidth: LINE_WIDTH,
      semi: true,
      singleQuote: false,
      tabWidth: 2,
      trailingComma: "all",
      useTabs: false,
    },
  });
  // A safety net for empty interfaces the schema walk did not foresee.
  return code
    .trim()
    .replace(/^export interface (\w+) \{\}$/gm, `export type $1 = ${NO_PROPERTIES};`)
    .concat("\n");
}

/** The first line of a text, for a `//` comment: every line terminator of JavaScript ends it. */
const firstLine = (text: string) => (text.split(/[\r\n\u2028\u2029]/)[0] ?? "").trim();

/** `[a, b] as const` on one line when it fits, else one item a line, as Biome writes it. */
function constArray(head: string, items: readonly string[]): string[] {
  const flat = `${head}[${items.join(", ")}] as const;`;
  if (flat.length <= LINE_WIDTH || items.length === 0) return [flat];
  return [`${head}[`, ...items.map((item) => `  ${item},`), "] as const;"];
}

/** One member of `Tools`, broken over lines as Biome does when it is wider than the line. */
function toolsMember(key: string, name: string): string[] {
  const flat = `  ${key}: { input: ${name}Input; output: ${name}Output };`;
  if (flat.length <= LINE_WIDTH) return [flat];
  return [`  ${key}: {`, `    input: ${name}Input;`, `    output: ${name}Output;`, "  };"];
}

/**
 * The TypeScript of typed bindings for a catalog: `Tools` (id -> input and output types), `toolIds`,
 * and `createTools(client)`, whose `tools["Calculator.Add@1.0.0"]({ a: 1, b: 2 })` is type-checked
 * and resolves with the typed value. Deterministic: the same catalog gives the same file, which passes
 * `biome check` with the project's settings and `tsc --strict`.
 */
export async function generateBindings(tools: readonly ToolDefinition[], source: string): Promise<string> {
  const sorted = [...tools].sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
  const parts = [
    `// Generated by otc codegen from ${firstLine(source)} — do not edit.`,
    // Lint rules are a matter of taste the generator cannot know (naming conventions, say); formatting still applies.
    "// biome-ignore-all lint: generated by otc codegen; regenerate it instead of editing it",
    "",
    'import { type BoundTools, bindTools, type OxpClient } from "@otc/client";',
    "",
  ];
  const members: string[] = [];
  for (const tool of sorted) {
    const name = typeNameOf(tool.id);
    const description = firstLine(tool.description);
    parts.push(`// ${firstLine(tool.id)}${description ? `: ${description}` : ""}`);
    parts.push(await typeFor(tool.input_schema as Schema, `${name}Input`, true));
    parts.push(
      tool.output_schema === null
        ? `export type ${name}Output = null;\n`
        : await typeFor(tool.output_schema as Schema, `${name}Output`, false),
    );
    members.push(...toolsMember(JSON.stringify(tool.id), name));
  }
  parts.push(
    "/** Every tool of the catalog: its input and output types. */",
    ...(members.length > 0 ? ["export interface Tools {", ...members, "}"] : [`export type Tools = ${NO_PROPERTIES};`]),
    "",
    "/** The tool ids of the catalog. */",
    ...constArray(
      "export const toolIds = ",
      sorted.map((tool) => JSON.stringify(tool.id)),
    ),
    "",
    "/** One typed function per tool: resolves with the tool's value, throws OxpToolCallError when the tool fails. */",
    "export function createTools(client: OxpClient): BoundTools<Tools> {",
    "  return bindTools<Tools>(client, toolIds);",
    "}",
    "",
  );
  return parts.join("\n");
}
