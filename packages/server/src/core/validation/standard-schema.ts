/**
 * The input check of a tool whose input is a Standard Schema (zod 4, valibot, arktype...): the library validates, and
 * its issues become neutral ones. A wrong type, a missing or unknown property and a value not among those allowed
 * get the words every provider uses; any other issue keeps the library's message, without the value sent.
 */
import type { StandardSchemaV1 } from "@standard-schema/spec";
import { shorten } from "../errors.js";
import { isPending, type OrPromise } from "../fast-path.js";
import { explained, issue, pointerOf, type SchemaIssue } from "../input-validation.js";
import { typesOf, valuesOf } from "./standard-schema-vendors.js";

/**
 * A tool input as its schema library judged it: the value the tool runs with, what is wrong with it, or the error
 * the library threw (a refinement of the tool author's that failed), which fails the call as a tool's error would.
 */
export type InputCheck = { value: unknown } | { issues: readonly SchemaIssue[] } | { failure: true; error: unknown };

/** Checks a tool's input with its schema library: at once when the library answers synchronously, else later. */
export type InputParser = (input: unknown, all: boolean) => OrPromise<InputCheck>;

/**
 * The input check of a Standard Schema tool (zod, valibot and arktype answer synchronously unless a schema has an
 * asynchronous refinement). `all: false` keeps only the first issue (a hostile input's).
 */
export function standardInputParser(schema: StandardSchemaV1): InputParser {
  const vendor = schema["~standard"].vendor;
  const judge = (input: unknown, all: boolean, result: StandardSchemaV1.Result<unknown>): InputCheck =>
    result.issues ? { issues: toSchemaIssues(result.issues, input, vendor, all) } : { value: result.value };
  return (input, all) => {
    let result: OrPromise<StandardSchemaV1.Result<unknown>>;
    try {
      result = schema["~standard"].validate(input);
    } catch (error) {
      return { failure: true, error };
    }
    return isPending(result)
      ? result.then(
          (settled) => judge(input, all, settled),
          (error: unknown) => ({ failure: true, error }),
        )
      : judge(input, all, result);
  };
}

/** Whether the value at `keys` is a property missing from its object: every library reports those its own way. */
function isMissing(input: unknown, keys: readonly PropertyKey[]): boolean {
  const parent = keys.slice(0, -1).reduce<unknown>((at, key) => (at as Record<PropertyKey, unknown>)?.[key], input);
  return (
    keys.length > 0 &&
    typeof parent === "object" &&
    parent !== null &&
    !Array.isArray(parent) &&
    !Object.hasOwn(parent, keys[keys.length - 1] as PropertyKey)
  );
}

/** A library's message without the value sent (which may be a megabyte long), cut to 200 characters, capitalized. */
function sentence(message: string): string {
  const trimmed = shorten(
    message
      .replace(/ \(was [\s\S]*\)$/, "") // arktype: `must be a string (was 5)`
      .replace(/ but received [\s\S]*$/, "") // valibot: `Invalid type: Expected string but received 5`
      .replace(/: Received [\s\S]*$/, "") // valibot, a check without an expectation: `Invalid email: Received "..."`
      .replace(/\.$/, ""),
    200,
  );
  return trimmed.charAt(0).toUpperCase() + trimmed.slice(1);
}

/** One library issue as neutral issues (zod reports all of an object's unknown keys in one). */
function toIssue(found: StandardSchemaV1.Issue & Record<string, unknown>, input: unknown, vendor: string) {
  const keys = (found.path ?? []).map((segment) => (typeof segment === "object" ? segment.key : segment));
  const at = pointerOf(keys);
  if (found.code === "unrecognized_keys" && Array.isArray(found.keys)) {
    return found.keys.map((key) => issue.additional(pointerOf([...keys, String(key)])));
  }
  const removed = vendor === "arktype" && found.code === "predicate" && found.expected === "removed";
  if ((vendor === "valibot" && found.expected === "never") || removed) {
    return [issue.additional(at)];
  }
  if (isMissing(input, keys)) {
    return [issue.required(at)];
  }
  const types = typesOf(found, vendor);
  const values = types ? undefined : valuesOf(found, vendor);
  if (types || values) {
    return [
      types ? issue.type(at, types) : values?.length === 1 ? issue.const(at, values[0]) : issue.enum(at, values ?? []),
    ];
  }
  // A union's problem starts with the path (`lang must be...`); a plain one's does not.
  const problem = vendor === "arktype" && found.code !== "union" ? found.problem : undefined;
  return [{ instancePath: at, kind: "other", message: sentence(String(problem ?? found.message)) } as SchemaIssue];
}

/** A library's issues as neutral ones, for `toParameterErrors`; only the first when `all` is false. */
export function toSchemaIssues(
  issues: readonly StandardSchemaV1.Issue[],
  input: unknown,
  vendor: string,
  all = true,
): readonly SchemaIssue[] {
  const mapped = (all ? issues : issues.slice(0, 1)).flatMap((found) =>
    toIssue(found as StandardSchemaV1.Issue & Record<string, unknown>, input, vendor),
  );
  return explained(mapped, all);
}
