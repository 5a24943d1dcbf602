/** Which OXP versions a request may ask for: the `OXP-Version` header and the envelope's `$schema`. */
import { ENVELOPE_SCHEMA_PATTERN, SUPPORTED_OXP_VERSIONS } from "@otc/types";
import { shorten, WireError } from "./errors.js";

const SCHEMA_URI = new RegExp(ENVELOPE_SCHEMA_PATTERN);
const SUPPORTED: readonly string[] = SUPPORTED_OXP_VERSIONS;

/** The 400 for an OXP version this server does not speak, quoting what was asked (cut short). */
export function unsupportedVersion(asked: string): WireError {
  return new WireError("bad_request", `OXP version '${shorten(asked)}' is not supported`, {
    developerMessage: `Supported OXP versions: ${SUPPORTED.join(", ")} (OXP-Version header); envelope $schema: urn:oxp:1.0, otc://1.0, or an http(s) URI ending in /1.0/openapi.json`,
  });
}

/** Throws a 400 unless the `OXP-Version` request header is absent or a supported value. */
export function checkOxpVersionHeader(value: string | undefined): void {
  if (value === undefined) return;
  if (!SUPPORTED.includes(value.trim())) throw unsupportedVersion(value);
}

/** Throws a 400 unless an envelope's `$schema` is absent or names OXP 1.0. */
export function checkEnvelopeSchema(value: unknown): void {
  if (value === undefined) return;
  if (typeof value !== "string" || !SCHEMA_URI.test(value)) throw unsupportedVersion(String(value));
}
