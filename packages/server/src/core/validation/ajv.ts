/**
 * @otc/server/validation/ajv: tool schemas compiled by Ajv, the fastest validator, where the runtime lets code be
 * generated (Node, Bun, Deno: the default there). Its errors become neutral issues; its own words are not kept.
 *
 * @example
 * import { ajvValidators } from "@otc/server/validation/ajv";
 * const server = createServer({ tools, inputValidator: ajvValidators() });
 */
import { createAjv } from "@otc/types/ajv";
import type { Ajv2020, ErrorObject, ValidateFunction } from "ajv/dist/2020.js";
import {
  explained,
  issue,
  pointerOf,
  type SchemaIssue,
  type SchemaValidator,
  type SchemaValidators,
} from "../input-validation.js";
import { insideSummary, keywordIssue, notAllowed, segmentsOf, tooManyItems, valueAt } from "./json-schema-issues.js";

/** Where a keyword of the schema sits: inside a summary (see insideSummary), and the schema that holds it. */
interface Location {
  readonly inside: boolean;
  readonly holder: Record<string, unknown>;
}

/** A schema's keyword locations, read once each: they are the schema's own, so their number is bounded by its size. */
type Locate = (schemaPath: string) => Location;

function locator(schema: object): Locate {
  const known = new Map<string, Location>();
  return (schemaPath) => {
    let location = known.get(schemaPath);
    if (!location) {
      const segments = segmentsOf(schemaPath);
      // The schema path's last segment is the keyword: the rest leads to the schema holding it.
      location = {
        inside: insideSummary(segments),
        holder: valueAt(schema, segments.slice(0, -1)) as Record<string, unknown>,
      };
      known.set(schemaPath, location);
    }
    return location;
  };
}

/** One Ajv error as an issue; undefined for one that another issue of the same failure tells better. */
function toIssue(error: ErrorObject, locate: Locate): SchemaIssue | undefined {
  const at = error.instancePath;
  const params = error.params as Record<string, unknown>;
  const location = locate(error.schemaPath);
  if (location.inside) {
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
      return keywordIssue(at, error.keyword, location.holder);
  }
}

function toIssues(errors: readonly ErrorObject[] | null | undefined, locate: Locate): SchemaIssue[] {
  const issues: SchemaIssue[] = [];
  for (const error of errors ?? []) {
    const found = toIssue(error, locate);
    if (found) {
      issues.push(found);
    }
  }
  return issues;
}

/**
 * A cheap first-error pass, and the all-errors pass only for invalid values: compiled for the first of them, not at
 * start. Compiling every schema twice at start doubled a server's start-up and the heap its validators hold (10,000
 * tools: bench/results/notes.md), for a pass most schemas never run; a schema the first-error pass compiled, the
 * all-errors pass compiles too (the same schema and options but `allErrors`).
 */
class AjvSchemaValidator implements SchemaValidator {
  private readonly locate: Locate;
  private full: ValidateFunction | undefined;

  constructor(
    private readonly schema: object,
    private readonly fast: ValidateFunction,
    private readonly fullAjv: Ajv2020,
  ) {
    this.locate = locator(schema);
  }

  errors(value: unknown, all = true): readonly SchemaIssue[] | undefined {
    if (this.fast(value)) {
      return undefined;
    }
    if (!all) {
      return explained(toIssues(this.fast.errors, this.locate), false);
    }
    let full = this.full;
    if (full === undefined) {
      full = this.fullAjv.compile(this.schema);
      this.full = full;
    }
    full(value);
    return explained(toIssues(full.errors ?? this.fast.errors, this.locate), true);
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
    compile: (schema) => new AjvSchemaValidator(schema, fast.compile(schema), full),
  };
}
