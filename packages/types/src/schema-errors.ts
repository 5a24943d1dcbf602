/** The one way schema errors become a line of text: `path message`, joined with `; `. */

/** A schema error as Ajv and the precompiled validators report it. */
export interface SchemaError {
  instancePath: string;
  message?: string | undefined;
}

/** How {@link formatSchemaErrors} writes errors. */
export interface FormatSchemaErrorsOptions {
  /** Written before each error's path, e.g. `body` for `body/tool_id`. Default: nothing. */
  prefix?: string;
  /** Written instead of the path when prefix and path are both empty (an error about the whole value). Default `(value)`. */
  root?: string;
  /** At most this many errors; long lists are cut, not summarized. Default: all. */
  max?: number;
}

/**
 * Writes schema errors as `path message` joined with `; ` (`is invalid` when an error has no message).
 *
 * @example
 * formatSchemaErrors(validate.errors, { root: "(body)", max: 5 }); // "/tool_id must be string; (body) must have required property 'input'"
 */
export function formatSchemaErrors(
  errors: readonly SchemaError[] | null | undefined,
  options: FormatSchemaErrorsOptions = {},
): string {
  const { prefix = "", root = "(value)", max = Number.POSITIVE_INFINITY } = options;
  return (errors ?? [])
    .slice(0, max)
    .map((error) => `${prefix + error.instancePath || root} ${error.message ?? "is invalid"}`)
    .join("; ");
}
