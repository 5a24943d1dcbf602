/**
 * @otc/types/ajv: the one Ajv every package validates OXP messages and tool schemas with, its options stated once.
 * A subpath of its own, so that importing `@otc/types` never loads Ajv (about 50 ms and its dependencies).
 */
import { Ajv2020 } from "ajv/dist/2020.js";
import addFormats from "ajv-formats";

// The string formats live without Ajv (@otc/types/ajv-formats), for a Worker that validates with cfworker.
export { STRING_FORMATS } from "./ajv-formats.js";

/** Options of {@link createAjv}. */
export interface CreateAjvOptions {
  /** Report every error, not only the first: for the slow path that explains a failure. Default false. */
  allErrors?: boolean;
  /** Schemas added up front, each then found by its `$id` with `ajv.getSchema` (e.g. `allSchemas`). */
  schemas?: readonly object[];
}

/**
 * An Ajv for JSON Schema 2020-12 with ajv-formats' formats checked, that leaves values as they are (no type
 * coercion, no defaults written in, no properties removed) and accepts keywords it does not know, as a tool's
 * schema may hold them (`strict: false`).
 *
 * @example
 * const ajv = createAjv({ allErrors: true, schemas: allSchemas });
 * const validate = ajv.getSchema(CallToolResponseSchema.$id);
 */
export function createAjv(options: CreateAjvOptions = {}): Ajv2020 {
  const ajv = new Ajv2020({
    allErrors: options.allErrors ?? false,
    strict: false,
    coerceTypes: false,
    useDefaults: false,
    removeAdditional: false,
    validateFormats: true,
  });
  addFormats.default(ajv);
  for (const schema of options.schemas ?? []) {
    ajv.addSchema(schema);
  }
  return ajv;
}
