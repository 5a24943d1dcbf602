/**
 * @otc/server/validation/ajv: tool schemas compiled by Ajv, the fastest validator, where the runtime lets code be
 * generated (Node, Bun, Deno: the default there). Its errors become neutral issues; its own words are not kept.
 *
 * @example
 * import { ajvValidators } from "@otc/server/validation/ajv";
 * const server = createServer({ tools, inputValidator: ajvValidators() });
 */
import { createAjv } from "@otc/types/ajv";
import type { ErrorObject, ValidateFunction } from "ajv/dist/2020.js";
import {
  explained,
  issue,
  pointerOf,
  type SchemaIssue,
  type SchemaValidator,
  type SchemaValidators,
} from "../input-validation.js";
import { insideSummary, keywordIssue, notAllowed, segmentsOf, tooManyItems, valueAt } from "./json-schema-issues.js";

/** One Ajv error as an issue; undefined for one that another issue of the same failure tells better. */
function toIssue(error: ErrorObject, schema: object): SchemaIssue | undefined {
  const at = error.instancePath;
  const params = error.params as Record<string, unknown>;
  const location = segmentsOf(error.schemaPath);
  if (insideSummary(location)) {
    return undefined;
  }
  switch (error.keyword) {
    case "required":
    case "dependentRequired":
    case "dependencies":
      return typeof params.missingProperty === "string"
        ? issue.required(at + pointerOf([params.missingProperty]))
        : undefined;
    case "additionalProperties":
      return issue.additional(at + pointerOf([String(params.additionalProperty)]));
    case "unevaluatedProperties":
      return issue.additional(at + pointerOf([String(params.unevaluatedProperty)]));
    case "items":
    case "unevaluatedItems":
      return tooManyItems(at);
    case "false schema":
      return notAllowed(at);
    default:
      // The schema path's last segment is the keyword: the rest leads to the schema holding it.
      return keywordIssue(at, error.keyword, valueAt(schema, location.slice(0, -1)) as Record<string, unknown>);
  }
}

function toIssues(errors: readonly ErrorObject[] | null | undefined, schema: object): SchemaIssue[] {
  return (errors ?? []).flatMap((error) => toIssue(error, schema) ?? []);
}

/** A cheap first-error pass, and the all-errors pass only for invalid values. */
class AjvSchemaValidator implements SchemaValidator {
  constructor(
    private readonly schema: object,
    private readonly fast: ValidateFunction,
    private readonly full: ValidateFunction,
  ) {}

  errors(value: unknown, all = true): readonly SchemaIssue[] | undefined {
    if (this.fast(value)) {
      return undefined;
    }
    if (!all) {
      return explained(toIssues(this.fast.errors, this.schema), false);
    }
    this.full(value);
    return explained(toIssues(this.full.errors ?? this.fast.errors, this.schema), true);
  }
}

/**
 * Ajv's validators: one Ajv for the first-error pass, one for the all-errors pass that explains a failure. A schema
 * that is not draft 2020-12 is refused by Ajv's own meta-schema check when compiled. Compiling runs `new Function`;
 * merely loading Ajv does not.
 */
export function ajvValidators(): SchemaValidators {
  const fast = createAjv();
  const full = createAjv({ allErrors: true });
  return {
    name: "ajv",
    formats: new Set(Object.keys(fast.formats)),
    compile: (schema) => new AjvSchemaValidator(schema, fast.compile(schema), full.compile(schema)),
  };
}
