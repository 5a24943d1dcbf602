/** Reads tool definitions leniently: the older drafts wrapped input_schema in `{"parameters": ...}`. */
import { unwrapInputSchema } from "@otc/types";

/** A definition with its input_schema in the flat form; anything that is not an object is left alone. */
export function normalizeToolDefinition(definition: unknown): unknown {
  if (typeof definition !== "object" || definition === null) {
    return definition;
  }
  const { input_schema: schema } = definition as { input_schema?: unknown };
  const flat = unwrapInputSchema(schema);
  return flat === schema ? definition : { ...definition, input_schema: flat };
}
