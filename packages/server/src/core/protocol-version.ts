/** Which OXP versions a request may ask for: the `OXP-Version` header and the envelope's `$schema`. */
import { ENVELOPE_SCHEMA, ENVELOPE_SCHEMA_PATTERN, SUPPORTED_OXP_VERSIONS } from "@otc/types";
import { shorten, WireError } from "./errors.js";

const SCHEMA_URI = new RegExp(ENVELOPE_SCHEMA_PATTERN);
const SUPPORTED: readonly string[] = SUPPORTED_OXP_VERSIONS;

/** The 400 for an OXP version this server does not speak, quoting what was asked (cut short). */
export function unsupportedVersion(asked: string): WireError {
  return new WireError("bad_request", `OXP version '${shorten(asked)}' is not supported`, {
    // The accepted `$schema` forms are the spec's pattern; quoting it keeps this message from going stale.
    developerMessage: `Supported OXP versions: ${SUPPORTED.join(", ")} (OXP-Version header); envelope $schema: ${ENVELOPE_SCHEMA} or another value matching ${ENVELOPE_SCHEMA_PATTERN}`,
  });
}

/** Throws a 400 unless the `OXP-Version` request header is absent or a supported value. */
export function checkOxpVersionHeader(value: string | undefined): void {
  if (value === undefined) {
    return;
  }
  if (!SUPPORTED.includes(value.trim())) {
    throw unsupportedVersion(value);
  }
}

/** Throws a 400 unless an envelope's `$schema` is absent or names OXP 1.0. */
export function checkEnvelopeSchema(value: unknown): void {
  if (value === undefined) {
    return;
  }
  if (typeof value !== "string" || !SCHEMA_URI.test(value)) {
    throw unsupportedVersion(String(value));
  }
}
