// Pins every row of the wire error table, and the body each kind is sent with.
import { describe, expect, it } from "vitest";
import { WIRE_ERROR_STATUS, WireError, type WireErrorKind } from "./errors.js";

describe("WIRE_ERROR_STATUS", () => {
  it.each<[WireErrorKind, number]>([
    ["bad_request", 400],
    ["unauthorized", 401],
    ["forbidden", 403],
    ["not_found", 404],
    ["method_not_allowed", 405],
    ["payload_too_large", 413],
    ["unsupported_media_type", 415],
    ["invalid_input", 422],
    ["too_many_requests", 429],
    ["internal", 500],
    ["unavailable", 503],
  ])("%s is %i", (kind, status) => {
    expect(WIRE_ERROR_STATUS[kind]).toBe(status);
    expect(new WireError(kind, "m").status).toBe(status);
  });

  it("has no row this test does not pin", () => {
    expect(Object.keys(WIRE_ERROR_STATUS)).toHaveLength(11);
  });
});

describe("WireError.toBody", () => {
  it("is a ValidationErrorResponse for invalid_input", () => {
    const error = new WireError("invalid_input", "Some input parameters are invalid", {
      parameterErrors: { b: "Must be a number" },
      developerMessage: "never sent in a 422",
    });
    expect(error.toBody()).toEqual({
      message: "Some input parameters are invalid",
      parameter_errors: { b: "Must be a number" },
    });
  });

  it("is a ServerErrorResponse otherwise, without the cause", () => {
    const error = new WireError("bad_request", "Authorization required", {
      developerMessage: "d",
      missingRequirements: { user_id: true },
      cause: new Error("secret detail"),
    });
    expect(error.toBody()).toEqual({
      message: "Authorization required",
      developer_message: "d",
      missing_requirements: { user_id: true },
    });
    expect(JSON.stringify(error.toBody())).not.toContain("secret detail");
  });
});

describe("WireError stacks", () => {
  it("captures none for a client's mistake, keeps one for a server fault, and leaves Error.stackTraceLimit as it was", () => {
    const limit = Error.stackTraceLimit;
    const client = new WireError("invalid_input", "Some input parameters are invalid");
    expect(client.stack).not.toMatch(/\n\s+at /);
    expect(Error.stackTraceLimit).toBe(limit);
    const server = new WireError("internal", "Something broke");
    expect(server.stack).toMatch(/\n\s+at /);
    expect(new Error("plain").stack).toMatch(/\n\s+at /);
    expect(Error.stackTraceLimit).toBe(limit);
  });

  it("sets nothing global to get there: Error.stackTraceLimit is never written", () => {
    const descriptor = Object.getOwnPropertyDescriptor(Error, "stackTraceLimit");
    const writes: unknown[] = [];
    let limit = Error.stackTraceLimit;
    Object.defineProperty(Error, "stackTraceLimit", {
      configurable: true,
      get: () => limit,
      set: (value: number) => {
        writes.push(value);
        limit = value;
      },
    });
    try {
      new WireError("invalid_input", "Some input parameters are invalid");
      new WireError("internal", "Something broke");
    } finally {
      if (descriptor) {
        Object.defineProperty(Error, "stackTraceLimit", descriptor);
      }
    }
    expect(writes).toEqual([]);
  });
});
