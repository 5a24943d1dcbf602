/** Validates tool inputs and outputs with a validator chosen per runtime, and turns schema errors into `parameter_errors`. */
import { createAjvValidators } from "./ajv-validation.js";
import { createCfworkerValidators } from "./cfworker-validation.js";
import { ServerConfigError } from "./errors.js";

/**
 * One schema error, in Ajv's shape whichever validator found it: `parameter_errors` and the output check's
 * message are made of these, so both validators answer alike.
 */
export interface SchemaIssue {
  /** The JSON Pointer of the value at fault (`/address/zip`), `""` for the whole value. */
  instancePath: string;
  /** The failing keyword, as Ajv names it (`false schema` for a `false` subschema). */
  keyword: string;
  /** Ajv's params for the keyword (`missingProperty`, `allowedValues`, `limit`...). */
  params: Record<string, unknown>;
  /** Ajv's message: `must be number`, `must NOT have more than 3 items`. */
  message?: string;
}

/** Validates one schema's values. */
export interface SchemaValidator {
  /**
   * Undefined when `value` is valid; else every error, or only the first when `all` is false. Every error of a
   * hostile input can be tens of thousands of objects (60,000 unknown keys: 60,000 errors) where only
   * {@link MAX_PARAMETER_ERRORS} are kept: callers ask for the first only for large inputs.
   */
  errors(value: unknown, all?: boolean): readonly SchemaIssue[] | undefined;
}

/** Which validator checks tool inputs and outputs (see {@link InputValidatorChoice}). */
export type InputValidator = "ajv" | "cfworker";

/**
 * `ajv` compiles each schema to JavaScript (the fastest, but it needs `new Function` when the tools are compiled);
 * `cfworker` interprets schemas (@cfworker/json-schema: for runtimes that refuse code generated at run time, such as
 * Cloudflare workerd while it handles requests); `auto` takes Ajv where `new Function` works, else cfworker.
 */
export type InputValidatorChoice = InputValidator | "auto";

/** A validator's way of compiling tool schemas, and what it knows. */
export interface SchemaValidators {
  readonly name: InputValidator;
  /** The `format` values it checks: a schema naming another is refused at start-up rather than left unchecked. */
  readonly formats: ReadonlySet<string>;
  /** Compiles a schema; throws an Error saying why when it is not a valid JSON Schema (draft 2020-12). */
  compile(schema: object): SchemaValidator;
}

/** Set once code generation was refused: it never comes back. */
let codeGenerationRefused = false;

/**
 * Whether code made from strings can run here, now. Node, Bun and Deno allow it; Node with
 * `--disallow-code-generation-from-strings` does not; workerd allows it while a worker's module is evaluated (its
 * startup) and refuses it while handling requests. So a yes is asked again each time (it costs microseconds), and
 * a no is kept.
 */
export function canGenerateCode(): boolean {
  if (codeGenerationRefused) {
    return false;
  }
  try {
    return new Function("return 1")() === 1;
  } catch {
    codeGenerationRefused = true;
    return false;
  }
}

/**
 * The validators for a choice. `auto` asks {@link canGenerateCode} when the tools are compiled: a core built at a
 * worker's top level gets Ajv (its validators are made then, and run later without generating code), one built
 * while handling a request gets cfworker.
 */
export function schemaValidators(choice: InputValidatorChoice = "auto"): SchemaValidators {
  const name = choice === "auto" ? (canGenerateCode() ? "ajv" : "cfworker") : choice;
  if (name === "ajv") {
    return createAjvValidators();
  }
  if (name === "cfworker") {
    return createCfworkerValidators();
  }
  throw new ServerConfigError(`inputValidator must be "ajv", "cfworker" or "auto", not ${JSON.stringify(choice)}`);
}

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

/** A sentence for one error, fit for the model: "Must be a number", "Is required". */
function describe(error: SchemaIssue): string {
  const params = error.params;
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

/** The property path of an error: `b`, `address.zip`, `items.2`; a missing property by its own name. */
function pathOf(error: SchemaIssue): string {
  const segments = error.instancePath
    .split("/")
    .slice(1)
    .map((segment) => segment.replaceAll("~1", "/").replaceAll("~0", "~"));
  const params = error.params;
  if (error.keyword === "required") {
    segments.push(String(params.missingProperty));
  }
  if (error.keyword === "additionalProperties") {
    segments.push(String(params.additionalProperty));
  }
  if (error.keyword === "unevaluatedProperties") {
    segments.push(String(params.unevaluatedProperty));
  }
  return segments.length === 0 ? "input" : segments.join(".");
}

/** `parameter_errors` from schema errors: one message per path (the first), at most {@link MAX_PARAMETER_ERRORS}. */
export function toParameterErrors(errors: readonly SchemaIssue[]): Record<string, string> {
  const out: Record<string, string> = {};
  let count = 0;
  for (const error of errors) {
    // oneOf/anyOf/if report a summary beside the detailed errors of their branches; the details say more.
    if (error.keyword === "oneOf" || error.keyword === "anyOf" || error.keyword === "if") {
      continue;
    }
    const path = pathOf(error);
    if (Object.hasOwn(out, path)) {
      continue;
    }
    Object.defineProperty(out, path, { value: describe(error), enumerable: true, writable: true, configurable: true });
    if (++count >= MAX_PARAMETER_ERRORS) {
      break;
    }
  }
  if (count === 0 && errors.length > 0) {
    out.input = describe(errors[0] as SchemaIssue);
  }
  return out;
}
