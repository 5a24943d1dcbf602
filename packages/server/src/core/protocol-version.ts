/** Which OXP versions a request may ask for (header and envelope `$schema`), and the draft envelope's shape. */
import {
  type CallToolEnvelope,
  type CallToolRequest,
  type CallToolResponse,
  type CallToolResultEnvelope,
  ENVELOPE_SCHEMA_PATTERN,
  OXP_VERSION,
  SUPPORTED_OXP_VERSIONS,
} from "@otc/types";
import { WireError } from "./errors.js";

/** The `$schema` this server writes into a CallToolResultEnvelope. */
export const RESULT_ENVELOPE_SCHEMA = `urn:oxp:${OXP_VERSION}`;

const SCHEMA_URI = new RegExp(ENVELOPE_SCHEMA_PATTERN);
const SUPPORTED: readonly string[] = SUPPORTED_OXP_VERSIONS;

function unsupported(asked: string): WireError {
  const shown = asked.length > 64 ? `${asked.slice(0, 64)}...` : asked;
  return new WireError("bad_request", `OXP version '${shown}' is not supported`, {
    developerMessage: `Supported OXP versions: ${SUPPORTED.join(", ")} (OXP-Version header); envelope $schema: urn:oxp:1.0, otc://1.0, or an http(s) URI ending in /1.0/openapi.json`,
  });
}

/** Throws a 400 unless the `OXP-Version` request header is absent or a supported value. */
export function checkOxpVersionHeader(value: string | undefined): void {
  if (value === undefined) return;
  if (!SUPPORTED.includes(value.trim())) throw unsupported(value);
}

/** Throws a 400 unless an envelope's `$schema` is absent or names OXP 1.0. */
export function checkEnvelopeSchema(value: unknown): void {
  if (value === undefined) return;
  if (typeof value !== "string" || !SCHEMA_URI.test(value)) throw unsupported(String(value));
}

/** A call body in either form: the canonical flat request or the 1.0 draft's envelope. */
export type CallBody = CallToolRequest | CallToolEnvelope;

/** True for the draft envelope: a body whose top level has a `request` object. */
export function isEnvelope(body: CallBody): body is CallToolEnvelope {
  const request = (body as { request?: unknown }).request;
  return typeof request === "object" && request !== null && !Array.isArray(request);
}

/** The 200 body for a call made in `envelope` form or not. */
export function wrapResponse(response: CallToolResponse, envelope: boolean): CallToolResponse | CallToolResultEnvelope {
  return envelope ? { $schema: RESULT_ENVELOPE_SCHEMA, result: response } : response;
}
