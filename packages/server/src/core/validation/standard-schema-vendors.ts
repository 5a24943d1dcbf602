/** What zod, valibot and arktype add to the Standard Schema issue: the type or the values a value should have had, read from each library's own fields. */

/** JSON Schema's type names, by the names libraries give them. */
const TYPE_NAMES: Record<string, string> = {
  array: "array",
  boolean: "boolean",
  int: "integer",
  integer: "integer",
  null: "null",
  number: "number",
  object: "object",
  loose_object: "object",
  strict_object: "object",
  string: "string",
};

/** Parses valibot's `("en" | "fr")`; undefined when a part is no JSON value. */
function parseOptions(expected: unknown): unknown[] | undefined {
  try {
    return typeof expected === "string"
      ? expected
          .replace(/^\((.*)\)$/s, "$1")
          .split(" | ")
          .map((part) => JSON.parse(part) as unknown)
      : undefined;
  } catch {
    return undefined;
  }
}

/** The JSON types an issue says the value should have, read through the fields its library adds to the Standard ones. */
export function typesOf(found: Record<string, unknown>, vendor: string): string[] | undefined {
  const branches = Array.isArray(found.errors) ? (found.errors as Record<string, unknown>[]) : [];
  // An integer check is a type to JSON Schema, a refinement of numbers to valibot (`integer`) and arktype (divisor 1).
  const integer = (vendor === "valibot" && found.type === "integer") || (vendor === "arktype" && found.rule === 1);
  const names =
    vendor === "zod" && found.code === "invalid_type"
      ? [found.expected]
      : vendor === "valibot" && found.kind === "schema"
        ? [found.type]
        : integer && (found.code === "divisor" || found.kind === "validation")
          ? ["integer"]
          : vendor === "arktype" && found.code === "proto" && found.proto === Array
            ? ["array"]
            : vendor === "arktype" && (found.code === "domain" || found.code === "union")
              ? (found.code === "domain" ? [found] : branches).map((branch) => branch.domain)
              : [];
  const types = names.map((name) => (typeof name === "string" ? TYPE_NAMES[name] : undefined));
  return types.length > 0 && types.every(Boolean) ? (types as string[]) : undefined;
}

/** The values an issue says are the only ones allowed. */
export function valuesOf(found: Record<string, unknown>, vendor: string): unknown[] | undefined {
  const branches = Array.isArray(found.errors) ? (found.errors as Record<string, unknown>[]) : [];
  if (vendor === "zod" && found.code === "invalid_value" && Array.isArray(found.values)) {
    return found.values;
  }
  if (vendor === "valibot" && ["literal", "picklist", "enum"].includes(String(found.type))) {
    return parseOptions(found.expected);
  }
  if (vendor === "arktype" && found.code === "unit") {
    return [found.unit];
  }
  const units = vendor === "arktype" && found.code === "union" && branches.every((branch) => branch.code === "unit");
  return units && branches.length > 0 ? branches.map((branch) => branch.unit) : undefined;
}
