/** One issue shape for every validator (Ajv, cfworker, a Standard Schema library), and the 422's `parameter_errors` made from it. */
import { ServerConfigError, WireError } from "./errors.js";

/**
 * What kind of rule a value broke. Closed: a client may branch on it, and each provider maps its library's
 * keywords or codes onto these. `branches` is an anyOf/oneOf/if that failed: the issues of its branches say more.
 */
export type IssueKind =
  | "type"
  | "required"
  | "additional"
  | "enum"
  | "const"
  | "format"
  | "pattern"
  | "length"
  | "range"
  | "items"
  | "properties"
  | "other"
  | "branches";

/**
 * One problem with a value, whichever validator found it. Its fields are those of `@otc/types`' SchemaError, so that
 * `formatSchemaErrors` writes the output check's message from it.
 */
export interface SchemaIssue {
  /** The JSON Pointer of the value at fault (`/address/zip`), a missing or unknown property's own; `""` for the whole value. */
  instancePath: string;
  kind: IssueKind;
  /** A sentence fit for the model: `Must be a number`, `Is required`. */
  message: string;
}

/** Validates one schema's values. */
export interface SchemaValidator {
  /**
   * Undefined when `value` is valid; else every issue, or only the first when `all` is false. Every issue of a
   * hostile input can be tens of thousands of objects (60,000 unknown keys: 60,000 issues) where only
   * {@link MAX_PARAMETER_ERRORS} are kept: callers ask for the first only for large inputs.
   */
  errors(value: unknown, all?: boolean): readonly SchemaIssue[] | undefined;
}

/**
 * A JSON Schema validator for tool schemas: `ajvValidators()` from `@otc/server/validation/ajv` or
 * `cfworkerValidators()` from `@otc/server/validation/cfworker`.
 */
export interface SchemaValidators {
  /** What the validator is called in logs and tests: `ajv`, `cfworker`. */
  readonly name: string;
  /** The `format` values it checks: a schema naming another is refused at start-up rather than left unchecked. */
  readonly formats: ReadonlySet<string>;
  /** Compiles a schema; throws an Error saying why when it is not a valid JSON Schema (draft 2020-12). */
  compile(schema: object): SchemaValidator;
}

/**
 * The `inputValidator` option: the validators tool inputs and outputs are checked with. Unset, the runtime's own
 * (the `@otc/server/validation/default` export: cfworker under the workerd, worker, edge-light and browser
 * conditions, where code generated at run time is refused; Ajv elsewhere).
 */
export type InputValidatorChoice = SchemaValidators;

/** `given` when it is a validator, else a {@link ServerConfigError} (a string such as `"cfworker"`, the old form). */
export function checkValidators(given: unknown): SchemaValidators {
  const candidate = given as Partial<SchemaValidators> | null;
  if (typeof candidate?.compile === "function" && typeof candidate.formats?.has === "function") {
    return candidate as SchemaValidators;
  }
  throw new ServerConfigError(
    `inputValidator must be ajvValidators() from @otc/server/validation/ajv or cfworkerValidators() from @otc/server/validation/cfworker, not ${typeof given === "string" ? JSON.stringify(given) : typeof given}`,
  );
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

/** The issues every provider reports alike, in the same words: the spec's own (`Must be a string`, `Is required`). */
export const issue = {
  type: (path: string, types: readonly string[]): SchemaIssue => ({
    instancePath: path,
    kind: "type",
    message: `Must be ${types.map((type) => ARTICLE[type] ?? type).join(" or ")}`,
  }),
  required: (path: string): SchemaIssue => ({ instancePath: path, kind: "required", message: "Is required" }),
  additional: (path: string): SchemaIssue => ({
    instancePath: path,
    kind: "additional",
    message: "Is not an allowed property",
  }),
  enum: (path: string, values: readonly unknown[]): SchemaIssue => ({
    instancePath: path,
    kind: "enum",
    message: `Must be one of: ${values.map((value) => JSON.stringify(value)).join(", ")}`,
  }),
  const: (path: string, value: unknown): SchemaIssue => ({
    instancePath: path,
    kind: "const",
    message: `Must be ${JSON.stringify(value)}`,
  }),
};

/** A JSON Pointer from property keys: `["a/b", 0]` is `/a~1b/0`. */
export const pointerOf = (keys: readonly PropertyKey[]): string =>
  keys.map((key) => `/${String(key).replaceAll("~", "~0").replaceAll("/", "~1")}`).join("");

/**
 * What a provider answers for an invalid value: its issues, or only the first when `all` is false (a branch's summary
 * only when nothing else), and never none (a failure its library did not explain is `Is invalid`).
 */
export function explained(issues: readonly SchemaIssue[], all: boolean): readonly SchemaIssue[] {
  const first = issues.find((found) => found.kind !== "branches") ?? issues[0];
  if (!first) {
    return [{ instancePath: "", kind: "other", message: "Is invalid" }];
  }
  return all ? issues : [first];
}

/**
 * Which issue a path's message comes from when it has several: the most basic problem first (a missing property,
 * then an unknown one, then a wrong type...), so that every provider, whatever order it reports in, says the same.
 */
const RANK: Record<IssueKind, number> = {
  required: 0,
  additional: 1,
  type: 2,
  const: 3,
  enum: 4,
  format: 5,
  pattern: 6,
  length: 7,
  range: 8,
  items: 9,
  properties: 10,
  other: 11,
  branches: 12,
};

/** The property path of an issue: `b`, `address.zip`, `items.2`; `input` for the whole value. */
function keyOf(instancePath: string): string {
  if (instancePath === "") {
    return "input";
  }
  return instancePath
    .split("/")
    .slice(1)
    .map((segment) => segment.replaceAll("~1", "/").replaceAll("~0", "~"))
    .join(".");
}

/**
 * The issue each `parameter_errors` entry is made of, by its key: one per path (its most basic issue), at most
 * {@link MAX_PARAMETER_ERRORS} paths, in the order they were first reported. A branch's summary counts only when no
 * other issue was reported.
 */
export function parameterIssues(issues: readonly SchemaIssue[]): Map<string, SchemaIssue> {
  const detailed = issues.some((found) => found.kind !== "branches");
  const chosen = new Map<string, SchemaIssue>();
  for (const found of issues) {
    if (detailed && found.kind === "branches") {
      continue;
    }
    const key = keyOf(found.instancePath);
    const held = chosen.get(key);
    if (held ? RANK[found.kind] < RANK[held.kind] : chosen.size < MAX_PARAMETER_ERRORS) {
      chosen.set(key, found);
    }
  }
  return chosen;
}

/** `parameter_errors` from issues: each entry of {@link parameterIssues}, its issue's message. */
export function toParameterErrors(issues: readonly SchemaIssue[]): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [key, found] of parameterIssues(issues)) {
    // defineProperty, not assignment: a key named __proto__ stays a key.
    Object.defineProperty(out, key, { value: found.message, enumerable: true, writable: true, configurable: true });
  }
  return out;
}

/** The 422 of docs/protocol.md 3.3 step 6, for input that broke its schema. */
export function invalidInput(issues: readonly SchemaIssue[]): WireError {
  return new WireError("invalid_input", "Some input parameters are invalid", {
    parameterErrors: toParameterErrors(issues),
  });
}
