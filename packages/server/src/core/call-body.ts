/** The body of POST /tools/call in either form (flat request or the draft envelope): checked, unwrapped, answered. */
import {
  allSchemas,
  type CallToolEnvelope,
  CallToolEnvelopeSchema,
  type CallToolRequest,
  CallToolRequestSchema,
  type CallToolResponse,
  type CallToolResultEnvelope,
  OXP_VERSION,
} from "@otc/types";
import { Ajv2020, type ErrorObject } from "ajv/dist/2020.js";
import addFormats from "ajv-formats";
import { WireError } from "./errors.js";
import { checkEnvelopeSchema } from "./protocol-version.js";

/** The `$schema` this server writes into a CallToolResultEnvelope. */
export const RESULT_ENVELOPE_SCHEMA = `urn:oxp:${OXP_VERSION}`;

/** The message of every 400 for a body or parameter that breaks the spec. */
export const SPEC_MISMATCH_MESSAGE = "The request does not match the OXP specification";

/** How deep a body may nest when nothing else is said. */
export const DEFAULT_MAX_DEPTH = 64;

/** Throws a 400 when a value nests deeper than `max` arrays/objects. Iterative: a hostile body cannot overflow the stack. */
export function checkDepth(value: unknown, max: number): void {
  const stack: [unknown, number][] = [[value, 1]];
  while (stack.length > 0) {
    const [node, depth] = stack.pop() as [unknown, number];
    if (typeof node !== "object" || node === null) continue;
    if (depth > max) {
      throw new WireError("bad_request", "The request body is nested too deeply", {
        developerMessage: `Objects and arrays may nest at most ${max} levels deep.`,
      });
    }
    for (const child of Object.values(node))
      if (typeof child === "object" && child !== null) stack.push([child, depth + 1]);
  }
}

/** A call body in either form. */
export type CallBody = CallToolRequest | CallToolEnvelope;

const ajv = new Ajv2020({ allErrors: false, schemas: [...allSchemas] });
addFormats.default(ajv);
const validateRequest = ajv.getSchema<CallToolRequest>(CallToolRequestSchema.$id);
const validateEnvelope = ajv.getSchema<CallToolEnvelope>(CallToolEnvelopeSchema.$id);

/** True for the draft envelope: a body whose top level has a `request` object. */
export function isEnvelope(body: unknown): body is CallToolEnvelope {
  if (typeof body !== "object" || body === null || Array.isArray(body)) return false;
  const request = (body as { request?: unknown }).request;
  return typeof request === "object" && request !== null && !Array.isArray(request);
}

const describe = (errors: readonly ErrorObject[] | null | undefined, prefix: string) =>
  (errors ?? [])
    .slice(0, 5)
    .map((error) => `${prefix}${error.instancePath} ${error.message ?? "is invalid"}`)
    .join("; ");

/**
 * Checks a parsed body, once, before anything else reads it: its depth (at most `maxDepth` levels),
 * the envelope's `$schema`, then its shape against CallToolRequest or CallToolEnvelope (by whether it
 * has a `request` object). Returns the request inside; throws a 400 naming what is wrong. Every
 * adapter calls this: the core never sees an unchecked body.
 */
export function parseCallBody(
  body: unknown,
  maxDepth = DEFAULT_MAX_DEPTH,
): { request: CallToolRequest; envelope: boolean } {
  if (!validateRequest || !validateEnvelope) throw new Error("the spec's call schemas are missing from @otc/types");
  checkDepth(body, maxDepth);
  if (isEnvelope(body)) {
    checkEnvelopeSchema(body.$schema);
    if (validateEnvelope(body)) return { request: body.request, envelope: true };
    throw new WireError("bad_request", SPEC_MISMATCH_MESSAGE, {
      developerMessage: describe(validateEnvelope.errors, "body"),
    });
  }
  if (validateRequest(body)) return { request: body as CallToolRequest, envelope: false };
  throw new WireError("bad_request", SPEC_MISMATCH_MESSAGE, {
    developerMessage: describe(validateRequest.errors, "body"),
  });
}

/** The 200 body for a call made in `envelope` form or not. */
export function wrapResponse(response: CallToolResponse, envelope: boolean): CallToolResponse | CallToolResultEnvelope {
  return envelope ? { $schema: RESULT_ENVELOPE_SCHEMA, result: response } : response;
}
