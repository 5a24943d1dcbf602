/** Builds inputs from an input_schema: a minimal valid one, and invalid ones the server must refuse with a 422. */
type Schema = Record<string, unknown>;

const typeOf = (schema: Schema): string | undefined =>
  Array.isArray(schema.type)
    ? (schema.type.find((type) => type !== "null") as string | undefined)
    : (schema.type as string | undefined);

/** A value of a property's type that the schema's simple constraints accept; undefined when unsure. */
export function sampleValue(schema: Schema): unknown {
  if ("const" in schema) {
    return schema.const;
  }
  if (Array.isArray(schema.enum) && schema.enum.length > 0) {
    return schema.enum[0];
  }
  switch (typeOf(schema)) {
    case "string":
      return schema.format || schema.pattern ? undefined : "x".repeat(Math.max(1, Number(schema.minLength ?? 1)));
    case "integer":
      return typeof schema.minimum === "number" ? Math.ceil(schema.minimum) : 1;
    case "number":
      return typeof schema.minimum === "number" ? schema.minimum : 1;
    case "boolean":
      return true;
    case "array":
      return Number(schema.minItems ?? 0) > 0 ? undefined : [];
    case "object":
      return minimalObject(schema);
    default:
      return undefined;
  }
}

/** The smallest object with every required property filled; undefined when one cannot be made. */
export function minimalObject(schema: Schema): Record<string, unknown> | undefined {
  const properties = (schema.properties ?? {}) as Record<string, Schema>;
  const out: Record<string, unknown> = {};
  for (const name of (schema.required ?? []) as string[]) {
    const value = sampleValue(properties[name] ?? {});
    if (value === undefined) {
      return undefined;
    }
    out[name] = value;
  }
  return out;
}

/** A required property and a value of the wrong JSON type for it (a string for a number: no coercion allowed). */
export function wrongTypeFor(schema: Schema): { name: string; value: unknown } | undefined {
  const properties = (schema.properties ?? {}) as Record<string, Schema>;
  for (const name of (schema.required ?? []) as string[]) {
    const type = typeOf(properties[name] ?? {});
    if (type === "number" || type === "integer") {
      return { name, value: "5" };
    }
    if (type === "string") {
      return { name, value: 5 };
    }
    if (type === "boolean") {
      return { name, value: "true" };
    }
    if (type === "object" || type === "array") {
      return { name, value: 5 };
    }
  }
  return undefined;
}
