// The transport-neutral call-body check, for adapters without a contract validator of their own.
import { verifies } from "@otc/test-helpers/verifies";
import { describe, expect, it } from "vitest";
import { parseCallBody, unwrapCallBody, wrapResponse } from "./call-body.js";
import { WireError } from "./errors.js";

const request = { tool_id: "Calculator.Add", input: { a: 1, b: 2 } };

/** The WireError a body throws, or undefined. */
function refusal(body: unknown, maxDepth?: number): WireError | undefined {
  try {
    parseCallBody(body, maxDepth);
    return undefined;
  } catch (error) {
    if (error instanceof WireError) {
      return error;
    }
    throw error;
  }
}

describe("parseCallBody", () => {
  verifies("envelope.accept", "returns the request of a flat body and of the draft envelope", () => {
    expect(parseCallBody(request)).toEqual({ request, envelope: false });
    expect(parseCallBody({ $schema: "urn:oxp:1.0", request })).toEqual({ request, envelope: true });
    expect(parseCallBody({ request })).toEqual({ request, envelope: true });
  });

  it.each([
    ["an unknown top-level field", { ...request, inputs: {} }, "body must NOT have additional properties"],
    ["a tool id over 256 characters", { tool_id: `A.${"b".repeat(300)}` }, "body/tool_id must NOT have more than 256"],
    ["a version with a leading zero", { tool_id: "Calculator.Add@01" }, "body/tool_id must match pattern"],
    ["an envelope around a bad request", { request: { tool_id: 42 } }, "body/request/tool_id must be string"],
  ])("refuses %s with a 400 naming the problem", (_case, body, detail) => {
    const error = refusal(body);
    expect(error?.status).toBe(400);
    expect(error?.message).toBe("The request does not match the OXP specification");
    expect(error?.details.developerMessage).toContain(detail);
  });

  it("answers an unsupported $schema as an unsupported version", () => {
    expect(refusal({ $schema: "urn:oxp:2.0", request })?.message).toBe("OXP version 'urn:oxp:2.0' is not supported");
  });

  verifies("limits.nesting-depth", "checks the depth before anything reads the body", () => {
    const deep = JSON.parse(`{"tool_id": "A.B", "input": ${"[".repeat(100)}${"]".repeat(100)}}`);
    expect(refusal(deep, 64)?.message).toBe("The request body is nested too deeply");
  });
});

describe("unwrapCallBody and wrapResponse", () => {
  verifies("envelope.answer-in-kind", "answer in the form the call came in", () => {
    const response = { call_id: "c", duration: 1, success: true as const, value: 3 };
    expect(unwrapCallBody({ request })).toEqual({ request, envelope: true });
    expect(wrapResponse(response, true)).toEqual({ $schema: "urn:oxp:1.0", result: response });
    expect(wrapResponse(response, false)).toBe(response);
  });
});
