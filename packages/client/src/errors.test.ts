// Table test of the one factory that rebuilds errors from answers.
import { describe, expect, it } from "vitest";
import { answers } from "./answers.js";
import {
  errorFromResponse,
  OxpAuthenticationError,
  OxpProtocolError,
  OxpServerError,
  OxpValidationError,
} from "./errors.js";

const checks = { isServerError: answers.serverError, isValidationError: answers.validationError };

describe("errorFromResponse", () => {
  it.each([
    [400, { message: "Tool 'X' was not found" }, OxpServerError],
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
    [503, { message: "The server is shutting down" }, OxpServerError],
    [500, "Internal Server Error", OxpProtocolError],
    [422, { message: "x", parameter_errors: { b: 1 } }, OxpProtocolError],
    [400, { message: "x", extra: true }, OxpProtocolError],
    [200, { message: "x" }, OxpProtocolError],
  ])("%i %j is a %s", (status, body, kind) => {
    const error = errorFromResponse(status, body, checks);
    expect(error).toBeInstanceOf(kind);
    if (kind === OxpServerError) expect(error.constructor).toBe(OxpServerError);
  });

  it("keeps what the server said", () => {
    const error = errorFromResponse(
      400,
      {
        message: "Authorization required",
        developer_message: "d",
        missing_requirements: { authorization: [{ id: "c", url: "https://x.test/a", check_url: "https://x.test/c" }] },
      },
      checks,
    ) as OxpServerError;
    expect(error.message).toBe("Authorization required");
    expect(error.developerMessage).toBe("d");
    expect(error.authorizationChallenges).toEqual([
      { id: "c", url: "https://x.test/a", check_url: "https://x.test/c" },
    ]);
    const validation = errorFromResponse(422, { message: "m", parameter_errors: { b: "Must be a number" } }, checks);
    expect((validation as OxpValidationError).parameterErrors).toEqual({ b: "Must be a number" });
  });
});
