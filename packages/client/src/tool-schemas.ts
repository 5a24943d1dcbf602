/** Reads tool definitions leniently: the older drafts wrapped input_schema in `{"parameters": ...}`. */
import type { ToolDefinition } from "@otc/types";

/** A definition with its input_schema in the flat form; anything that is not an object is left alone. */
export function normalizeToolDefinition(definition: unknown): unknown {
  if (typeof definition !== "object" || definition === null) return definition;
  const { input_schema: schema } = definition as { input_schema?: unknown };
  if (typeof schema !== "object" || schema === null) return definition;
  const keys = Object.keys(schema);
  const parameters = (schema as { parameters?: unknown }).parameters;
  if (keys.length === 1 && typeof parameters === "object" && parameters !== null && !Array.isArray(parameters)) {
    return { ...(definition as ToolDefinition), input_schema: parameters };
  }
  return definition;
}
