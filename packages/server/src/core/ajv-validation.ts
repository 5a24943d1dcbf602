/** Tool schemas compiled by Ajv: the fastest validator, where the runtime lets code be generated (Node, Bun, Deno). */
import { createAjv } from "@otc/types/ajv";
import type { ValidateFunction } from "ajv/dist/2020.js";
import type { SchemaIssue, SchemaValidator, SchemaValidators } from "./input-validation.js";

/** A cheap first-error pass, and the all-errors pass only for invalid values. */
class AjvSchemaValidator implements SchemaValidator {
  constructor(
    private readonly fast: ValidateFunction,
    private readonly full: ValidateFunction,
  ) {}

  errors(value: unknown, all = true): readonly SchemaIssue[] | undefined {
    if (this.fast(value)) {
      return undefined;
    }
    if (!all) {
      return this.fast.errors ?? [];
    }
    this.full(value);
    return this.full.errors ?? this.fast.errors ?? [];
  }
}

/**
 * Ajv's validators: one Ajv for the first-error pass, one for the all-errors pass that explains a failure.
 * Compiling runs `new Function`; merely loading Ajv does not, so this module is safe to import anywhere.
 */
export function createAjvValidators(): SchemaValidators {
  const fast = createAjv();
  const full = createAjv({ allErrors: true });
  return {
    name: "ajv",
    formats: new Set(Object.keys(fast.formats)),
    compile: (schema) => new AjvSchemaValidator(fast.compile(schema), full.compile(schema)),
  };
}
