/** The `$schema` this project writes in the draft envelopes it sends (docs/protocol.md 3.2). */
import { OXP_VERSION } from "./generated/protocol.js";

/**
 * The `$schema` of an envelope this project writes, a request or a result: `urn:oxp:` and the spec's
 * OXP version. The spec accepts other forms too (`ENVELOPE_SCHEMA_PATTERN`); this is the one written.
 *
 * @example
 * const body = { $schema: ENVELOPE_SCHEMA, request: { tool_id: "Calculator.Add", input: { a: 1, b: 2 } } };
 */
export const ENVELOPE_SCHEMA = `urn:oxp:${OXP_VERSION}` as const;
