// The two error families: what the server answered (rebuilt from status and body) and local failures.
import type { CallToolFailure, ServerErrorResponse, ToolError } from "@otc/types";
import { describe, expect, expectTypeOf, it } from "vitest";
import { fromModelToolCall } from "./adapters.js";
import {
  errorFromResponse,
  OxpAuthenticationError,
  OxpConnectionError,
  OxpError,
  type OxpFailedOutcome,
  OxpLocalError,
  OxpModelCallError,
  OxpProtocolError,
  OxpResponseError,
  OxpServerError,
  OxpTimeoutError,
  OxpToolCallError,
  OxpValidationError,
} from "./errors.js";

const challenge = { id: "c", url: "https://x.test/a", check_url: "https://x.test/c" };
/** A tool's failure, as a 200 answers it. */
const response: CallToolFailure = {
  call_id: "c",
  duration: 3,
  success: false,
  error: { message: "Doorbell ID not found" },
};

describe("errorFromResponse: the server family", () => {
  it.each([
    [400, { message: "Tool 'X' was not found", developer_message: "available versions: 1.0.0" }, OxpServerError],
    [400, { message: "Authorization required", missing_requirements: { authorization: [challenge] } }, OxpServerError],
    [401, { message: "Authentication required" }, OxpAuthenticationError],
    [404, { message: "Not found" }, OxpServerError],
    [405, { message: "This method is not allowed here" }, OxpServerError],
    [413, { message: "The request body is too large" }, OxpServerError],
    [415, { message: "The request body must be JSON" }, OxpServerError],
    [
      422,
      { message: "Some input parameters are invalid", parameter_errors: { b: "Must be a number" } },
      OxpValidationError,
    ],
    [422, { message: "Some input parameters are invalid" }, OxpValidationError],
    [429, { message: "Slow down" }, OxpServerError],
    [500, { message: "Internal error" }, OxpServerError],
    [503, { message: "The server is shutting down" }, OxpServerError],
  ])("%i %j is exactly a %o with that status and body", (status, body, kind) => {
    const error = errorFromResponse(status, body);
    expect(error.constructor).toBe(kind);
    expect(error).toBeInstanceOf(OxpResponseError);
    expect(error).not.toBeInstanceOf(OxpLocalError);
    expect(error).toMatchObject({ status, body, message: body.message });
    // The body is the wire's, untouched: it serializes back to what the server sent.
    expect(JSON.parse(JSON.stringify((error as OxpResponseError).body))).toEqual(body);
  });

  it("keeps what the server said, in typed fields", () => {
    const body: ServerErrorResponse = {
      message: "Authorization required",
      developer_message: "d",
      missing_requirements: { authorization: [challenge], user_id: true },
    };
    const error = errorFromResponse(400, body) as OxpServerError;
    expect(error.body).toBe(body);
    expect(error.developerMessage).toBe("d");
    expect(error.missingRequirements).toEqual({ authorization: [challenge], user_id: true });
    expect(error.authorizationChallenges).toEqual([challenge]);
    expect((errorFromResponse(404, { message: "Not found" }) as OxpServerError).authorizationChallenges).toEqual([]);

    const validation = errorFromResponse(422, { message: "m", parameter_errors: { b: "Must be a number" } });
    expect(validation).toBeInstanceOf(OxpValidationError);
    expect((validation as OxpValidationError).parameterErrors).toEqual({ b: "Must be a number" });
    expect((errorFromResponse(422, { message: "m" }) as OxpValidationError).parameterErrors).toEqual({});
  });

  it("makes a 401 an OxpServerError too, with WWW-Authenticate when given the headers", () => {
    const body = { message: "Authentication required" };
    const error = errorFromResponse(401, body, new Headers({ "WWW-Authenticate": "Bearer" }));
    expect(error).toBeInstanceOf(OxpAuthenticationError);
    expect(error).toBeInstanceOf(OxpServerError);
    expect(error).toMatchObject({ status: 401, body, wwwAuthenticate: "Bearer" });
    expect((errorFromResponse(401, body) as OxpAuthenticationError).wwwAuthenticate).toBeUndefined();
  });

  it("needs only the status and the body: the client checks them against the spec itself", () => {
    expectTypeOf(errorFromResponse).toBeCallableWith(400, { message: "x" });
    expectTypeOf(errorFromResponse).toBeCallableWith(500, "not even JSON" as unknown);
    expectTypeOf(errorFromResponse).returns.toEqualTypeOf<OxpResponseError | OxpProtocolError>();
  });
});

describe("errorFromResponse: answers that break the spec are local", () => {
  it.each([
    ["a 500 page in text", 500, "Internal Server Error"],
    ["a 404 with no body", 404, undefined],
    ["a 422 whose parameter_errors are not strings", 422, { message: "x", parameter_errors: { b: 1 } }],
    ["a 422 with a ServerErrorResponse's extra field", 422, { message: "x", developer_message: "d" }],
    ["a 400 with a field the spec does not have", 400, { message: "x", extra: true }],
    ["a 401 without a message", 401, {}],
    ["a 503 that is an array", 503, [{ message: "x" }]],
    ["a success status", 200, { message: "x" }],
    ["a redirect", 302, { message: "x" }],
  ])("%s is an OxpProtocolError carrying the status", (_case, status, body) => {
    const error = errorFromResponse(status, body);
    expect(error.constructor).toBe(OxpProtocolError);
    expect(error).toBeInstanceOf(OxpLocalError);
    expect(error).not.toBeInstanceOf(OxpResponseError);
    expect(error).not.toHaveProperty("body");
    expect(error.status).toBe(status);
    expect((error as OxpProtocolError).details).toBeTruthy();
  });
});

describe("the hierarchy", () => {
  const local = [
    new OxpConnectionError("Could not reach http://127.0.0.1:9", { cause: new TypeError("fetch failed") }),
    new OxpTimeoutError("No answer within 100 ms"),
    new OxpProtocolError("Not JSON", 200, "<html>"),
  ];
  const answered = [
    new OxpServerError(400, { message: "Tool 'X' was not found" }),
    new OxpAuthenticationError(401, { message: "Authentication required" }, "Bearer"),
    new OxpValidationError(422, { message: "Invalid", parameter_errors: { b: "Must be a number" } }),
  ];

  it("keeps local failures out of the server family, and answers out of the local one", () => {
    for (const error of local) {
      expect(error).toBeInstanceOf(OxpError);
      expect(error).toBeInstanceOf(OxpLocalError);
      expect(error).not.toBeInstanceOf(OxpResponseError);
      expect(error).not.toHaveProperty("body");
    }
    for (const error of answered) {
      expect(error).toBeInstanceOf(OxpError);
      expect(error).toBeInstanceOf(OxpResponseError);
      expect(error).not.toBeInstanceOf(OxpLocalError);
      expect(error).toHaveProperty("body");
    }
  });

  it("names each error after its class, for logs and stack traces", () => {
    for (const error of [...local, ...answered]) {
      expect(error.name).toBe(error.constructor.name);
    }
  });

  it("puts tool and model failures in neither family", () => {
    const toolFailure = new OxpToolCallError({ kind: "tool-error", text: "Error: Doorbell ID not found", response });
    const modelFailure = (() => {
      try {
        fromModelToolCall("Calculator_Add", "{not json");
      } catch (error) {
        return error;
      }
    })();
    for (const error of [toolFailure, modelFailure]) {
      expect(error).toBeInstanceOf(OxpError);
      expect(error).not.toBeInstanceOf(OxpResponseError);
      expect(error).not.toBeInstanceOf(OxpLocalError);
    }
    expect(modelFailure).toBeInstanceOf(OxpModelCallError);
  });
});

describe("OxpToolCallError: a call that ended without a value", () => {
  const invalid = errorFromResponse(422, { message: "Some input parameters are invalid" }) as OxpValidationError;
  const refused = errorFromResponse(400, {
    message: "Authorization required",
    missing_requirements: { authorization: [challenge] },
  }) as OxpServerError;

  const cases: [string, OxpFailedOutcome, string | undefined, ToolError | undefined][] = [
    [
      "a tool's failure: its call_id and ToolError",
      { kind: "tool-error", text: "Error: no", response },
      "c",
      response.error,
    ],
    ["an input the server refused", { kind: "invalid-input", text: "Fix a", error: invalid }, undefined, undefined],
    [
      "an authorization to ask for",
      { kind: "authorization", text: "Open the link", challenges: [challenge], error: refused },
      undefined,
      undefined,
    ],
  ];
  it.each(cases)("carries its outcome: %s", (_name, outcome, callId, toolError) => {
    const error = new OxpToolCallError(outcome);
    expect(error).toMatchObject({ name: "OxpToolCallError", message: outcome.text, outcome, callId, error: toolError });
    // The AI SDK gives the model String(error): the text alone.
    expect(String(error)).toBe(outcome.text);
  });

  it("takes another message, as a typed binding gives the ToolError's", () => {
    const error = new OxpToolCallError({ kind: "tool-error", text: "Error: no", response }, response.error.message);
    expect(error.message).toBe("Doorbell ID not found");
    expect(error.outcome.text).toBe("Error: no");
  });
});
