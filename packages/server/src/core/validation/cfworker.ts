/**
 * @otc/server/validation/cfworker: tool schemas interpreted by @cfworker/json-schema, which generates no code at run
 * time (the default on workerd and other worker runtimes). Each output unit becomes a neutral issue read off the
 * schema and the value, never off cfworker's words.
 *
 * @example
 * import { cfworkerValidators } from "@otc/server/validation/cfworker";
 * const { handler } = createFetchHandler({ tools, inputValidator: cfworkerValidators() });
 */
import { dereference, type OutputUnit, type Schema, validate } from "@cfworker/json-schema";
import { STRING_FORMATS } from "@otc/types/ajv-formats";
import {
  explained,
  issue,
  pointerOf,
  type SchemaIssue,
  type SchemaValidator,
  type SchemaValidators,
} from "../input-validation.js";
import { addFormats, wellFormedNames, withOurFormats } from "./cfworker-copies.js";
import { checkSchema } from "./cfworker-meta-schema.js";
import {
  insideSummary,
  keywordIssue,
  missingOf,
  notAllowed,
  segmentsOf,
  tooManyItems,
  valueAt,
} from "./json-schema-issues.js";

type Json = Record<string, unknown>;

/** The issues one cfworker unit tells; `previous` is the unit before it. */
function unitIssues(unit: OutputUnit, previous: OutputUnit | undefined, schema: Json, input: unknown): SchemaIssue[] {
  const at = segmentsOf(unit.instanceLocation);
  const location = segmentsOf(unit.keywordLocation);
  if (unit.keyword === "false") {
    // A false schema's unit has the value's location for the schema's: the unit before it says what put it there.
    const by = previous?.keyword;
    const holder = valueAt(schema, segmentsOf(previous?.keywordLocation ?? "").slice(0, -1)) as Json | undefined;
    if (by === "additionalProperties" || by === "unevaluatedProperties") {
      return [issue.additional(pointerOf(at))];
    }
    if (by === "unevaluatedItems" || (by === "items" && holder?.prefixItems !== undefined)) {
      return [tooManyItems(pointerOf(at.slice(0, -1)))];
    }
    return [notAllowed(pointerOf(at))];
  }
  if (insideSummary(location)) {
    return [];
  }
  // The keyword's own segment is left off: dependentRequired's is misspelt (`dependantRequired`).
  const holder = (valueAt(schema, location.slice(0, -1)) ?? {}) as Json;
  const value = valueAt(input, at);
  const required = (names: unknown) => missingOf(value, names).map((name) => issue.required(pointerOf([...at, name])));
  if (unit.keyword === "required") {
    return required(holder.required);
  }
  if (unit.keyword === "dependentRequired" || unit.keyword === "dependencies") {
    const present = Object.entries((holder[unit.keyword] ?? {}) as Json).filter(
      ([name]) => typeof value === "object" && value !== null && Object.hasOwn(value, name),
    );
    return present.flatMap(([, names]) => required(names));
  }
  return [keywordIssue(pointerOf(at), unit.keyword, holder) ?? []].flat();
}

/** cfworker's units as issues, worded from `schema` (the author's: formats by their own names), each issue once. */
function toIssues(units: readonly OutputUnit[], schema: Json, input: unknown): SchemaIssue[] {
  // cfworker repeats some units, once per item or name.
  const out = new Map<string, SchemaIssue>();
  units.forEach((unit, n) => {
    for (const found of unitIssues(unit, units[n - 1], schema, input)) {
      out.set(JSON.stringify(found), found);
    }
  });
  return [...out.values()];
}

/** A schema's validator: cfworker's first-error pass, and the all-errors pass only for invalid values. */
class CfworkerSchemaValidator implements SchemaValidator {
  private readonly copy: Schema;
  private readonly lookup: Record<string, Schema | boolean>;

  constructor(private readonly schema: Json) {
    this.copy = withOurFormats(schema) as Schema;
    this.lookup = dereference(this.copy);
  }

  errors(value: unknown, all = true): readonly SchemaIssue[] | undefined {
    const first = this.check(value, true);
    if (first.valid) {
      return undefined;
    }
    const result = all ? this.check(first.checked, false) : first;
    return explained(toIssues(result.errors, this.schema, result.checked), all);
  }

  /** cfworker's answer for `value`, and the value it checked (see {@link wellFormedNames}). */
  private check(value: unknown, shortCircuit: boolean): { valid: boolean; errors: OutputUnit[]; checked: unknown } {
    try {
      return { ...validate(value, this.copy, "2020-12", this.lookup, shortCircuit), checked: value };
    } catch (error) {
      if (!(error instanceof URIError)) {
        throw error;
      }
      // Only the names' paths change (a name with a lone surrogate is as valid as before, bar a pattern on it).
      const checked = wellFormedNames(value);
      return { ...validate(checked, this.copy, "2020-12", this.lookup, shortCircuit), checked };
    }
  }
}

/**
 * cfworker's validators (draft 2020-12), with Ajv's string formats. Number formats (`int32`, `int64`, `float`,
 * `double`) are not among them: cfworker checks formats of strings only, so a schema naming one is refused at start-up
 * instead of left unchecked.
 */
export function cfworkerValidators(): SchemaValidators {
  addFormats();
  return {
    name: "cfworker",
    formats: new Set(STRING_FORMATS.keys()),
    compile(schema) {
      checkSchema(schema);
      return new CfworkerSchemaValidator(schema as Json);
    },
  };
}
