/** Validates tool inputs and outputs with Ajv, and turns Ajv's errors into `parameter_errors`. */
import type { Ajv2020, ErrorObject, ValidateFunction } from "ajv/dist/2020.js";

/** At most this many entries in one `parameter_errors`. */
export const MAX_PARAMETER_ERRORS = 50;

const ARTICLE: Record<string, string> = {
  array: "an array",
  boolean: "a boolean",
  integer: "an integer",
  null: "null",
  number: "a number",
  object: "an object",
  string: "a string",
};

const capitalize = (text: string) => text.charAt(0).toUpperCase() + text.slice(1);

/** A sentence for one Ajv error, fit for the model: "Must be a number", "Is required". */
function describe(error: ErrorObject): string {
  const params = error.params as Record<string, unknown>;
  switch (error.keyword) {
    case "type": {
      const types = String(params.type).split(",");
      return `Must be ${types.map((type) => ARTICLE[type] ?? type).join(" or ")}`;
    }
    case "required":
      return "Is required";
    case "additionalProperties":
    case "unevaluatedProperties":
      return "Is not an allowed property";
    case "enum":
      return `Must be one of: ${((params.allowedValues as unknown[]) ?? []).map((value) => JSON.stringify(value)).join(", ")}`;
    case "const":
      return `Must be ${JSON.stringify(params.allowedValue)}`;
    default:
      return capitalize(error.message ?? "is invalid");
  }
}

/** The property path of an Ajv error: `b`, `address.zip`, `items.2`; a missing property by its own name. */
function pathOf(error: ErrorObject): string {
  const segments = error.instancePath
    .split("/")
    .slice(1)
    .map((segment) => segment.replaceAll("~1", "/").replaceAll("~0", "~"));
  const params = error.params as Record<string, unknown>;
  if (error.keyword === "required") segments.push(String(params.missingProperty));
  if (error.keyword === "additionalProperties") segments.push(String(params.additionalProperty));
  if (error.keyword === "unevaluatedProperties") segments.push(String(params.unevaluatedProperty));
  return segments.length === 0 ? "input" : segments.join(".");
}

/** `parameter_errors` from Ajv's errors: one message per path (the first), at most {@link MAX_PARAMETER_ERRORS}. */
export function toParameterErrors(errors: readonly ErrorObject[]): Record<string, string> {
  const out: Record<string, string> = {};
  let count = 0;
  for (const error of errors) {
    // oneOf/anyOf/if report a summary beside the detailed errors of their branches; the details say more.
    if (error.keyword === "oneOf" || error.keyword === "anyOf" || error.keyword === "if") continue;
    const path = pathOf(error);
    if (Object.hasOwn(out, path)) continue;
    Object.defineProperty(out, path, { value: describe(error), enumerable: true, writable: true, configurable: true });
    if (++count >= MAX_PARAMETER_ERRORS) break;
  }
  if (count === 0 && errors.length > 0) out.input = describe(errors[0] as ErrorObject);
  return out;
}

/** Validates one schema's values: a cheap first-error pass, and the all-errors pass only for invalid values. */
export class SchemaValidator {
  private constructor(
    private readonly fast: ValidateFunction,
    private readonly full: ValidateFunction,
  ) {}

  /** Compiles a schema with both Ajv instances; throws when the schema is not valid. */
  static compile(schema: object, fastAjv: Ajv2020, fullAjv: Ajv2020): SchemaValidator {
    return new SchemaValidator(fastAjv.compile(schema), fullAjv.compile(schema));
  }

  /**
   * Undefined when `value` is valid; else every error (the all-errors pass), or only the first when `all` is
   * false. The all-errors pass builds one error object per problem, and a hostile input can hold tens of
   * thousands of them (60,000 unknown keys: 60,000 error objects) where only {@link MAX_PARAMETER_ERRORS} are
   * kept: callers skip it for large inputs.
   */
  errors(value: unknown, all = true): readonly ErrorObject[] | undefined {
    if (this.fast(value)) return undefined;
    if (!all) return this.fast.errors ?? [];
    this.full(value);
    return this.full.errors ?? this.fast.errors ?? [];
  }
}
