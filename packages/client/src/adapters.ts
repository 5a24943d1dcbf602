/** Hands OXP tools to LLMs (OpenAI, Anthropic) and their tool calls back to OXP; renders results for the model. */
import {
  type CallToolRequest,
  type CallToolResponse,
  compareToolVersions,
  formatToolId,
  type ToolDefinition,
} from "@otc/types";
import { OxpModelCallError } from "./errors.js";

type Schema = Record<string, unknown>;
const isObject = (value: unknown): value is Schema =>
  typeof value === "object" && value !== null && !Array.isArray(value);

/** The highest version of each tool name: a model should pick tools, not versions. */
export function latestVersions(tools: readonly ToolDefinition[]): ToolDefinition[] {
  const best = new Map<string, ToolDefinition>();
  for (const tool of tools) {
    const held = best.get(tool.name);
    if (!held || compareToolVersions(tool.version, held.version) > 0) {
      best.set(tool.name, tool);
    }
  }
  return tools.filter((tool) => best.get(tool.name) === tool);
}

/** An input schema with `type: "object"` at the top, as both vendors require. */
function objectSchema(schema: Schema): Schema {
  return schema.type === undefined ? { type: "object", properties: {}, ...schema } : schema;
}

/** Keywords OpenAI's strict mode accepts; the rest are dropped (the server still checks them: a 422 tells the model). */
const STRICT_KEYWORDS = new Set([
  "type",
  "description",
  "properties",
  "required",
  "additionalProperties",
  "items",
  "enum",
  "const",
  "anyOf",
  "title",
]);

function nullable(schema: Schema): Schema {
  if (Array.isArray(schema.enum)) {
    const types = Array.isArray(schema.type) ? schema.type : schema.type === undefined ? [] : [schema.type];
    return {
      ...schema,
      ...(types.length > 0 ? { type: [...new Set([...types, "null"])] } : {}),
      enum: [...schema.enum, null],
    };
  }
  if (typeof schema.type === "string") {
    return { ...schema, type: [schema.type, "null"] };
  }
  if (Array.isArray(schema.type)) {
    return { ...schema, type: [...new Set([...schema.type, "null"])] };
  }
  if (Array.isArray(schema.anyOf)) {
    return { ...schema, anyOf: [...schema.anyOf, { type: "null" }] };
  }
  return { anyOf: [schema, { type: "null" }] };
}

/** A schema OpenAI's strict mode accepts: every property required (optional ones nullable), no extra properties. */
function strictSchema(schema: Schema): Schema {
  const out: Schema = {};
  for (const [key, value] of Object.entries(schema)) {
    if (STRICT_KEYWORDS.has(key)) {
      out[key] = value;
    }
  }
  if (Array.isArray(schema.oneOf) && !out.anyOf) {
    out.anyOf = schema.oneOf;
  }
  if (Array.isArray(out.anyOf)) {
    out.anyOf = out.anyOf.map((item) => (isObject(item) ? strictSchema(item) : item));
  }
  if (isObject(out.items)) {
    out.items = strictSchema(out.items);
  }
  const isObjectType =
    out.type === "object" || (Array.isArray(out.type) && out.type.includes("object")) || isObject(out.properties);
  if (isObjectType) {
    const properties = isObject(out.properties) ? out.properties : {};
    const required = new Set(Array.isArray(schema.required) ? schema.required : []);
    out.type ??= "object";
    out.properties = Object.fromEntries(
      Object.entries(properties).map(([name, sub]) => {
        const strict = isObject(sub) ? strictSchema(sub) : {};
        return [name, required.has(name) ? strict : nullable(strict)];
      }),
    );
    out.required = Object.keys(properties);
    out.additionalProperties = false;
  }
  return out;
}

/** An OpenAI function tool. */
export interface OpenAITool {
  type: "function";
  function: { name: string; description: string; parameters: Schema; strict?: boolean };
}

/**
 * Tools for OpenAI's Chat Completions / Responses `tools`, one per tool name (its highest version).
 * `strict: true` rewrites each schema the way strict mode demands. A tool's `annotations` and
 * `deprecation_message` are left out: OpenAI's function tools have no place for them, and writing them
 * into the description would change what the model reads (filter on them before, e.g. drop deprecated tools).
 *
 * @example
 * const completion = await openai.chat.completions.create({ model, messages, tools: toOpenAITools(await client.listTools(), { strict: true }) });
 */
export function toOpenAITools(tools: readonly ToolDefinition[], options: { strict?: boolean } = {}): OpenAITool[] {
  return latestVersions(tools).map((tool) => {
    const parameters = objectSchema(tool.input_schema as Schema);
    return {
      type: "function",
      function: {
        name: tool.name,
        description: tool.description,
        parameters: options.strict ? strictSchema(parameters) : parameters,
        ...(options.strict ? { strict: true } : {}),
      },
    };
  });
}

/** An Anthropic Messages API tool. */
export interface AnthropicTool {
  name: string;
  description: string;
  input_schema: Schema;
}

/**
 * Tools for Anthropic's Messages API `tools`, one per tool name (its highest version). A tool's
 * `annotations` and `deprecation_message` are left out: the Messages API's tools have no place for them
 * (MCP's tool annotations are not part of it), and writing them into the description would change what the
 * model reads.
 *
 * @example
 * const message = await anthropic.messages.create({ model, max_tokens, messages, tools: toAnthropicTools(await client.listTools()) });
 */
export function toAnthropicTools(tools: readonly ToolDefinition[]): AnthropicTool[] {
  return latestVersions(tools).map((tool) => ({
    name: tool.name,
    description: tool.description,
    input_schema: objectSchema(tool.input_schema as Schema),
  }));
}

/** Removes the nulls strict mode makes a model send for optional properties the schema leaves out. */
function dropOptionalNulls(value: Schema, schema: Schema): Schema {
  const properties = isObject(schema.properties) ? schema.properties : {};
  const required = new Set(Array.isArray(schema.required) ? schema.required : []);
  const out: Schema = {};
  for (const [key, item] of Object.entries(value)) {
    if (item === null && !required.has(key)) {
      continue;
    }
    const sub = properties[key];
    Object.defineProperty(out, key, {
      value: isObject(item) && isObject(sub) ? dropOptionalNulls(item, sub) : item,
      enumerable: true,
      writable: true,
      configurable: true,
    });
  }
  return out;
}

/**
 * The CallToolRequest for a model's tool call. `args` is the model's JSON arguments (a string, as
 * OpenAI sends them, or an object, as Anthropic does). With the tool list, the name resolves to the
 * exact tool id and the nulls strict mode adds for optional properties are dropped; without it,
 * `Toolkit_Tool` becomes `Toolkit.Tool` (the latest version). Throws OxpModelCallError for a call it
 * cannot map, whose message suits being handed back to the model.
 */
export function fromModelToolCall(
  name: string,
  args: string | Record<string, unknown> | undefined,
  tools?: readonly ToolDefinition[],
): CallToolRequest {
  let parsed: unknown = args ?? {};
  if (typeof args === "string") {
    try {
      parsed = args.trim() === "" ? {} : JSON.parse(args);
    } catch {
      throw new OxpModelCallError(`The model's arguments for ${name} are not valid JSON`);
    }
  }
  if (!isObject(parsed)) {
    throw new OxpModelCallError(`The model's arguments for ${name} are not a JSON object`);
  }
  const tool = tools ? latestVersions(tools).find((candidate) => candidate.name === name) : undefined;
  if (tools && !tool) {
    throw new OxpModelCallError(`The model called ${name}, which is not among the tools`);
  }
  if (tool) {
    return { tool_id: tool.id, input: dropOptionalNulls(parsed, tool.input_schema as Schema) };
  }
  const at = name.indexOf("_");
  if (at <= 0) {
    throw new OxpModelCallError(`${name} is not a Toolkit_Tool name`);
  }
  return { tool_id: formatToolId({ toolkit: name.slice(0, at), tool: name.slice(at + 1) }), input: parsed };
}

/**
 * Text for the model from a response: the value (strings as they are, the rest as JSON), or the error's
 * message, its additional_prompt_content and whether to retry (when the tool says either way). Never the
 * developer_message.
 */
export function toModelText(response: CallToolResponse): string {
  if (response.success) {
    return typeof response.value === "string" ? response.value : JSON.stringify(response.value ?? null);
  }
  const { message, additional_prompt_content: extra, can_retry: canRetry, retry_after_ms: after } = response.error;
  const parts = [`Error: ${message}`];
  if (extra) {
    parts.push(extra);
  }
  if (canRetry) {
    parts.push(`The call may be retried${after !== undefined ? ` after ${after} ms` : ""}.`);
  } else if (canRetry === false) {
    // Said outright: a model told nothing tends to try the same call again.
    parts.push("Calling the tool again with the same input will not help.");
  }
  return parts.join("\n\n");
}
