// What the client throws, and when it retries, against a fetch that answers whatever each test says.
import { ManualClock } from "@otc/test-helpers/manual-clock";
import { describe, expect, it } from "vitest";
import { createClient } from "./client.js";
import {
  OxpAuthenticationError,
  OxpConnectionError,
  OxpError,
  OxpLocalError,
  OxpProtocolError,
  OxpResponseError,
  OxpServerError,
  OxpTimeoutError,
  OxpValidationError,
} from "./errors.js";

/**
 * A client whose fetch answers `status` and `body` (JSON unless a string) every time, counting requests; it waits
 * between attempts on `clock` (the runtime's by default).
 */
function answering(status: number, body: unknown, headers: Record<string, string> = {}, clock?: ManualClock) {
  const seen = { requests: 0 };
  const client = createClient({
    baseUrl: "http://oxp.test",
    retry: { maxAttempts: 3, baseDelayMs: 1 },
    ...(clock ? { clock } : {}),
    fetch: async () => {
      seen.requests++;
      const text = typeof body === "string" ? body : JSON.stringify(body);
      return new Response(text, { status, headers: { "content-type": "application/json", ...headers } });
    },
  });
  return { client, seen };
}

const call = { tool_id: "Calculator.Add", input: { a: 1, b: 2 } };

describe("the server family, as callTool throws it", () => {
  it.each([
    [400, { message: "Tool 'X' was not found" }, OxpServerError],
    [401, { message: "Authentication required" }, OxpAuthenticationError],
    [422, { message: "Invalid", parameter_errors: { b: "Must be a number" } }, OxpValidationError],
  ])("a %i is thrown at once, never retried, with its status and body", async (status, body, kind) => {
    const { client, seen } = answering(status, body, { "www-authenticate": "Bearer" });
    const error = await client.callTool(call).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(kind);
    expect(error).toMatchObject({ status, body });
    expect(seen.requests).toBe(1);
  });

  it("keeps a 401's WWW-Authenticate", async () => {
    const { client } = answering(401, { message: "Authentication required" }, { "www-authenticate": "Bearer" });
    const error = await client.listTools().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OxpAuthenticationError);
    expect((error as OxpAuthenticationError).wwwAuthenticate).toBe("Bearer");
  });

  it("retries a 503 and throws it as an OxpServerError once attempts run out", async () => {
    const { client, seen } = answering(503, { message: "The server is shutting down" }, { "retry-after-ms": "1" });
    const error = await client.callTool(call).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OxpServerError);
    expect(error).toMatchObject({ status: 503, body: { message: "The server is shutting down" } });
    expect(seen.requests).toBe(3);
  });

  it("returns a tool failure as data, retrying it while can_retry says so", async () => {
    const failure = { call_id: "c", duration: 1, success: false, error: { message: "Busy", can_retry: true } };
    const { client, seen } = answering(200, failure);
    expect(await client.callTool(call)).toEqual(failure);
    expect(seen.requests).toBe(3);
  });
});

describe("the local family, as the client throws it", () => {
  it.each([
    ["a success that is not JSON", 200, "<html>hello</html>"],
    ["a success that is not a CallToolResponse", 200, { ok: true }],
    ["an error status with a text body", 404, "Not Found"],
    ["a 422 that is not a ValidationErrorResponse", 422, { message: "x", parameter_errors: { b: 1 } }],
  ])("%s is an OxpProtocolError with the answer's status", async (_case, status, body) => {
    const { client, seen } = answering(status, body);
    const error = await client.callTool(call).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OxpProtocolError);
    expect(error).toBeInstanceOf(OxpLocalError);
    expect(error).not.toBeInstanceOf(OxpResponseError);
    expect(error).toMatchObject({ status });
    expect(seen.requests).toBe(1);
  });

  it("a fetch that fails is an OxpConnectionError, retried, with fetch's error as cause", async () => {
    let requests = 0;
    const reason = new TypeError("fetch failed");
    const client = createClient({
      baseUrl: "http://oxp.test",
      retry: { maxAttempts: 2, baseDelayMs: 1 },
      fetch: async () => {
        requests++;
        throw reason;
      },
    });
    const error = await client.callTool(call).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OxpConnectionError);
    expect(error).not.toBeInstanceOf(OxpResponseError);
    expect((error as OxpConnectionError).cause).toBe(reason);
    expect(requests).toBe(2);
  });

  it("an attempt past timeoutMs is an OxpTimeoutError, retried", async () => {
    let requests = 0;
    const client = createClient({
      baseUrl: "http://oxp.test",
      timeoutMs: 20,
      retry: { maxAttempts: 2, baseDelayMs: 1 },
      fetch: (input) => {
        requests++;
        const { signal } = input as Request;
        return new Promise((_resolve, reject) => signal.addEventListener("abort", () => reject(signal.reason)));
      },
    });
    const error = await client.callTool(call).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OxpTimeoutError);
    expect(error).toBeInstanceOf(OxpLocalError);
    expect(requests).toBe(2);
  });

  it("an abort is the signal's reason, not an OxpError", async () => {
    const clock = new ManualClock();
    const { client, seen } = answering(503, { message: "Draining" }, { "retry-after-ms": "10000" }, clock);
    const controller = new AbortController();
    const calling = client.callTool(call, { signal: controller.signal }).catch((e: unknown) => e);
    // Aborted while the client waits out the 503's Retry-After, which its clock never lets pass (a client that did not
    // wait would have ended the call already).
    expect(await Promise.race([clock.untilPending(1).then(() => "waits"), calling.then(() => "ends")])).toBe("waits");
    controller.abort(new Error("user gave up"));
    // The wait's timer went with the abort.
    expect(clock.pending).toBe(0);
    const error = await calling;
    expect(error).toEqual(new Error("user gave up"));
    expect(error).not.toBeInstanceOf(OxpError);
    expect(seen.requests).toBe(1);
  });
});
