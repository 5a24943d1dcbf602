/**
 * @otc/types/ajv: the one Ajv every package validates OXP messages and tool schemas with, its options stated once,
 * and its string formats as plain predicates for a validator that cannot compile code (@otc/server's on workerd).
 * A subpath of its own, so that importing `@otc/types` never loads Ajv (about 50 ms and its dependencies).
 */
import type { Format } from "ajv";
import { Ajv2020 } from "ajv/dist/2020.js";
import addFormats from "ajv-formats";
import { fullFormats } from "ajv-formats/dist/formats.js";

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

/** A string format's check as a plain predicate, or undefined for a format of numbers (which strings always pass). */
function stringCheck(format: Format): ((value: string) => boolean) | undefined {
  if (format === true) {
    return () => true;
  }
  if (typeof format === "string") {
    return stringCheck(new RegExp(format));
  }
  if (format instanceof RegExp || typeof format === "function") {
    return stringCheck({ validate: format });
  }
  if (format.type === "number" || format.async) {
    return undefined;
  }
  const { validate } = format;
  if (typeof validate === "function") {
    return (value) => (validate as (value: string) => boolean)(value);
  }
  const pattern = typeof validate === "string" ? new RegExp(validate) : validate;
  return (value) => pattern.test(value);
}

/**
 * The string formats {@link createAjv} checks (ajv-formats' "full" ones), as predicates by name: for a validator
 * other than Ajv, so that both agree on what `email` or `date-time` accepts. Number formats (`int32`, `int64`,
 * `float`, `double`) are left out.
 *
 * @example
 * STRING_FORMATS.get("date")?.("2024-02-30"); // false
 */
export const STRING_FORMATS: ReadonlyMap<string, (value: string) => boolean> = new Map(
  Object.entries(fullFormats).flatMap(([name, format]) => {
    const check = stringCheck(format);
    return check ? [[name, check] as const] : [];
  }),
);
