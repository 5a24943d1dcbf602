/** The older drafts' `{"parameters": {...}}` input_schema form, which readers accept and writers never emit. */

/**
 * The flat form of an input_schema: for a schema whose only keyword is an object-valued
 * `parameters` (the older drafts' wrapping), that object; any other value as it is.
 *
 * @example
 * unwrapInputSchema({ parameters: { type: "object" } }); // { type: "object" }
 */
export function unwrapInputSchema<T>(schema: T): T {
  if (typeof schema !== "object" || schema === null || Array.isArray(schema)) {
    return schema;
  }
  const parameters = (schema as { parameters?: unknown }).parameters;
  const wrapped =
    Object.keys(schema).length === 1 &&
    typeof parameters === "object" &&
    parameters !== null &&
    !Array.isArray(parameters);
  return wrapped ? (parameters as T) : schema;
}
