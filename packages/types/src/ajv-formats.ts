/**
 * @otc/types/ajv-formats: the string formats Ajv checks (ajv-formats' "full" ones) as plain predicates, for a
 * validator that cannot compile code (@otc/server's cfworker one, on workerd). A subpath of its own, without Ajv: a
 * Worker that validates with cfworker does not load Ajv for them.
 */
import type { Format } from "ajv";
import { fullFormats } from "ajv-formats/dist/formats.js";

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
 * The string formats `createAjv` (@otc/types/ajv) checks (ajv-formats' "full" ones), as predicates by name: for a validator
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
