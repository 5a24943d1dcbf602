/** The body of POST /tools/call in either form (flat request or the draft envelope): checked, unwrapped, answered. */
import {
  type CallToolEnvelope,
  type CallToolRequest,
  type CallToolResponse,
  type CallToolResultEnvelope,
  ENVELOPE_SCHEMA,
  formatSchemaErrors,
  type SchemaError,
  validateCallToolEnvelope,
  validateCallToolRequest,
} from "@otc/types";
import { WireError } from "./errors.js";
import { DEFAULT_MAX_DEPTH, tooDeep } from "./json-limits.js";
import { checkEnvelopeSchema } from "./protocol-version.js";

export { DEFAULT_MAX_DEPTH };

/** The message of every 400 for a body or parameter that breaks the spec. */
export const SPEC_MISMATCH_MESSAGE = "The request does not match the OXP specification";

/**
 * Throws a 400 when a parsed value nests deeper than `max` arrays/objects. Iterative: a hostile body cannot
 * overflow the stack. The HTTP adapters check a body's bytes with `scanJson` instead, before parsing it; this is
 * for a value that arrives already parsed.
 */
export function checkDepth(value: unknown, max: number): void {
  const stack: [unknown, number][] = [[value, 1]];
  while (stack.length > 0) {
    const [node, depth] = stack.pop() as [unknown, number];
    if (typeof node !== "object" || node === null) {
      continue;
    }
    if (depth > max) {
      throw tooDeep(max);
    }
    for (const child of Object.values(node)) {
      if (typeof child === "object" && child !== null) {
        stack.push([child, depth + 1]);
      }
    }
  }
}

/** A call body in either form. */
export type CallBody = CallToolRequest | CallToolEnvelope;

/** True for the draft envelope: a body whose top level has a `request` object. */
export function isEnvelope(body: unknown): body is CallToolEnvelope {
  if (typeof body !== "object" || body === null || Array.isArray(body)) {
    return false;
  }
  const request = (body as { request?: unknown }).request;
  return typeof request === "object" && request !== null && !Array.isArray(request);
}

/** What a 400 says of a body that breaks a schema: the first few errors, each at its path from `body`. */
const describe = (errors: readonly SchemaError[] | null | undefined) =>
  formatSchemaErrors(errors, { prefix: "body", max: 5 });

/**
 * The request inside a body that a contract check already passed (the Express adapter's is
 * express-openapi-validator, after {@link checkDepth}), and whether it came in the draft envelope.
 */
export function unwrapCallBody(body: CallBody): { request: CallToolRequest; envelope: boolean } {
  return isEnvelope(body) ? { request: body.request, envelope: true } : { request: body, envelope: false };
}

/**
 * Checks a parsed body for an adapter that has no contract check of its own, then unwraps it: its
 * depth first (a hostile body never reaches a validator), the envelope's `$schema`, then its shape
 * against CallToolRequest or CallToolEnvelope with the validators precompiled from the spec. Throws a
 * 400 naming what is wrong.
 */
export function parseCallBody(
  body: unknown,
  maxDepth = DEFAULT_MAX_DEPTH,
): { request: CallToolRequest; envelope: boolean } {
  checkDepth(body, maxDepth);
  return checkCallBody(body);
}

/** {@link parseCallBody} for a body whose depth is already bounded (its bytes passed `scanJson`). */
export function checkCallBody(body: unknown): { request: CallToolRequest; envelope: boolean } {
  if (isEnvelope(body)) {
    checkEnvelopeSchema(body.$schema);
    if (!validateCallToolEnvelope(body)) {
      throw new WireError("bad_request", SPEC_MISMATCH_MESSAGE, {
        developerMessage: describe(validateCallToolEnvelope.errors),
      });
    }
  } else if (!validateCallToolRequest(body)) {
    throw new WireError("bad_request", SPEC_MISMATCH_MESSAGE, {
      developerMessage: describe(validateCallToolRequest.errors),
    });
  }
  return unwrapCallBody(body as CallBody);
}

/** The 200 body for a call made in `envelope` form or not. */
export function wrapResponse(response: CallToolResponse, envelope: boolean): CallToolResponse | CallToolResultEnvelope {
  return envelope ? { $schema: ENVELOPE_SCHEMA, result: response } : response;
}
