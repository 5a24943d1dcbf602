// docs/protocol.md section 3 over HTTP: call ids, versions, order of checks, input errors, tool errors, envelope.
import { verifies } from "@otc/test-helpers/verifies";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { callTool, expectError, expectSchema, type Running, startServer } from "./harness.js";

let server: Running;
beforeAll(async () => {
  server = await startServer({ secrets: {} });
});
afterAll(() => server.close());

const UUID_V4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

async function succeed(body: Record<string, unknown>): Promise<unknown> {
  const reply = await callTool(server.baseUrl, body);
  expect(reply.status, reply.text).toBe(200);
  expectSchema("CallToolResponse", reply.body);
  expect(reply.body.success, reply.text).toBe(true);
  return reply.body.value;
}

describe("call_id and duration (docs/protocol.md 3.5)", () => {
  verifies(
    "response.call-id-and-duration",
    "keeps the call_id the client sent and makes a UUID v4 when it sent none, with a numeric duration",
    async () => {
      const mine = await callTool(server.baseUrl, {
        tool_id: "Calculator.Add",
        call_id: "my-call-1",
        input: { a: 1, b: 1 },
      });
      expect(mine.body.call_id).toBe("my-call-1");
      const made = await callTool(server.baseUrl, { tool_id: "Calculator.Add", input: { a: 1, b: 1 } });
      expect(made.body.call_id).toMatch(UUID_V4);
      expect(made.body.duration).toEqual(expect.any(Number));
      expect(made.body.duration).toBeGreaterThanOrEqual(0);
    },
  );
});

describe("version resolution (docs/protocol.md 3.4)", () => {
  verifies.each([
    ["Greeting.Hello@1.0.0", "Hello, Ann!"],
    ["Greeting.Hello@1", "Hello, Ann!"],
    ["Greeting.Hello@2.0.0", { message: "Hello, Ann!", language: "en" }],
    ["Greeting.Hello@2", { message: "Hello, Ann!", language: "en" }],
    ["Greeting.Hello", { message: "Hello, Ann!", language: "en" }],
  ])(
    ["tool-id.exact-version", "tool-id.major-shorthand", "tool-id.latest"],
    "%s runs the right version",
    async (toolId, expected) => {
      expect(await succeed({ tool_id: toolId, input: { name: "Ann" } })).toEqual(expected);
    },
  );

  verifies.each([
    ["Greeting.Hello@3", "Greeting.Hello version 3.0.0 is not available; available versions: 1.0.0, 2.0.0."],
    ["Greeting.Hello@1.1.0", "Greeting.Hello version 1.1.0 is not available; available versions: 1.0.0, 2.0.0."],
    ["Calculator.Add@2.0.0", "Calculator.Add version 2.0.0 is not available; available versions: 1.0.0."],
  ])("call.unknown-tool-400", "%s is a 400 saying what was asked and what exists", async (toolId, developerMessage) => {
    const reply = await callTool(server.baseUrl, { tool_id: toolId, input: { name: "Ann" } });
    expectError(reply, 400);
    expect(reply.body.message).toBe(`Tool '${toolId.split("@")[0]}' was not found`);
    expect(reply.body.developer_message).toBe(developerMessage);
  });

  verifies("tool-id.case-sensitive", "matches case-sensitively", async () => {
    expectError(await callTool(server.baseUrl, { tool_id: "calculator.add", input: { a: 1, b: 2 } }), 400);
  });

  verifies.each([
    "Calculator",
    "Calculator.Add@1.0",
    "Calculator.Add@latest",
    "Calc-ulator.Add",
    "A.B.C",
    `${"A".repeat(5000)}.B`,
  ])("tool-id.pattern", "refuses the malformed id %s with a 400", async (toolId) => {
    expectError(await callTool(server.baseUrl, { tool_id: toolId }), 400);
  });
});

describe("order of checks (docs/protocol.md 3.3)", () => {
  verifies(
    "call.order-of-checks",
    "body shape before tool, tool before requirements, requirements before input",
    async () => {
      const shape = await callTool(server.baseUrl, { tool_id: "Nope.Nope", inputs: {} });
      expectError(shape, 400);
      expect(shape.body.message).toBe("The request does not match the OXP specification");

      const tool = await callTool(server.baseUrl, { tool_id: "Nope.Nope", input: { bad: true } });
      expectError(tool, 400);
      expect(tool.body.message).toBe("Tool 'Nope.Nope' was not found");

      const requirement = await callTool(server.baseUrl, { tool_id: "SMS.Send", input: { to: 5 } });
      expectError(requirement, 400);
      expect(requirement.body.message).toBe("A secret this tool needs was not provided");

      const input = await callTool(server.baseUrl, {
        tool_id: "SMS.Send",
        input: { to: 5 },
        context: { secrets: [{ id: "TWILIO_API_KEY", value: "k" }] },
      });
      expectError(input, 422);
    },
  );
});

describe("input validation (docs/protocol.md 3.3 step 6)", () => {
  verifies("call.input-422", "answers 422 with parameter_errors keyed by property", async () => {
    const reply = await callTool(server.baseUrl, { tool_id: "Calculator.Add@1.0.0", input: { a: 10, b: "infinity" } });
    expectError(reply, 422);
    expect(reply.body).toEqual({
      message: "Some input parameters are invalid",
      parameter_errors: { b: "Must be a number" },
    });
  });

  verifies(
    "call.input-422",
    "collects every error: missing required properties by their own name, unknown ones too",
    async () => {
      const reply = await callTool(server.baseUrl, { tool_id: "Calculator.Add", input: { c: 1 } });
      expectError(reply, 422);
      expect(reply.body.parameter_errors).toEqual({
        a: "Is required",
        b: "Is required",
        c: "Is not an allowed property",
      });
    },
  );

  verifies("call.input-422", "does not coerce types", async () => {
    const reply = await callTool(server.baseUrl, { tool_id: "Calculator.Add", input: { a: "5", b: 1 } });
    expectError(reply, 422);
    expect(reply.body.parameter_errors).toEqual({ a: "Must be a number" });
  });

  it("reports enum and range problems", async () => {
    const enumReply = await callTool(server.baseUrl, {
      tool_id: "Greeting.Hello@2",
      input: { name: "Ann", language: "de" },
    });
    expect(enumReply.body.parameter_errors).toEqual({ language: 'Must be one of: "en", "fr", "es"' });
    const before = server.counter.value;
    const range = await callTool(server.baseUrl, { tool_id: "Counter.Increment", input: { by: 0 } });
    expect(range.body.parameter_errors).toEqual({ by: "Must be >= 1" });
    const integer = await callTool(server.baseUrl, { tool_id: "Counter.Increment", input: { by: 1.5 } });
    expect(integer.body.parameter_errors).toEqual({ by: "Must be an integer" });
    // Refused before the tool runs: the counter never moved.
    expect(server.counter.value).toBe(before);
  });

  verifies("request.flat-shape", "treats an absent input as {}", async () => {
    const reply = await callTool(server.baseUrl, { tool_id: "Calculator.Add" });
    expectError(reply, 422);
    expect(reply.body.parameter_errors).toEqual({ a: "Is required", b: "Is required" });
  });
});

describe("tool failures are 200 responses (docs/protocol.md 3.6)", () => {
  verifies(
    ["tool-failure.always-200", "tool-failure.tool-error-passthrough"],
    "passes a tool's own error fields through unchanged",
    async () => {
      const reply = await callTool(server.baseUrl, {
        tool_id: "Doorbell.Ring@0.1.0",
        call_id: "723e4567-e89b-12d3-a456-426614174006",
        input: { doorbell_id: "doorbell1" },
      });
      expect(reply.status).toBe(200);
      expectSchema("CallToolResponse", reply.body);
      expect(reply.body).toEqual({
        call_id: "723e4567-e89b-12d3-a456-426614174006",
        duration: expect.any(Number),
        success: false,
        error: {
          message: "Doorbell ID not found",
          developer_message: "The doorbell with ID 'doorbell1' does not exist.",
          can_retry: true,
          additional_prompt_content: "ids: doorbell42,doorbell84",
          retry_after_ms: 500,
        },
      });
    },
  );
});

describe("the draft envelope (docs/protocol.md 3.2)", () => {
  verifies.each(["urn:oxp:1.0", "otc://1.0", "https://example.com/spec/http/1.0/openapi.json", undefined])(
    ["versions.envelope-schema", "envelope.accept", "envelope.answer-in-kind"],
    "accepts $schema %s and answers in the envelope",
    async (schema) => {
      const body: Record<string, unknown> = { request: { tool_id: "Calculator.Add", input: { a: 1, b: 2 } } };
      if (schema !== undefined) {
        body.$schema = schema;
      }
      const reply = await callTool(server.baseUrl, body);
      expect(reply.status, reply.text).toBe(200);
      expectSchema("CallToolResultEnvelope", reply.body);
      expect(reply.body).toMatchObject({ $schema: "urn:oxp:1.0", result: { success: true, value: 3 } });
    },
  );

  verifies.each(["otc://2.0", "urn:oxp:2.0", "https://example.com/2.0/openapi.json", "nonsense"])(
    "versions.envelope-schema",
    "refuses $schema %s as an unsupported version",
    async (schema) => {
      const reply = await callTool(server.baseUrl, { $schema: schema, request: { tool_id: "Calculator.Add" } });
      expectError(reply, 400);
      expect(reply.body.message).toMatch(/is not supported/);
    },
  );

  verifies("envelope.errors-unwrapped", "answers 400 and 422 in the same shape as the flat form", async () => {
    const notFound = await callTool(server.baseUrl, { request: { tool_id: "Calculator.Add@2.0.0" } });
    expectError(notFound, 400);
    const invalid = await callTool(server.baseUrl, { request: { tool_id: "Calculator.Add", input: { a: 1, b: "x" } } });
    expectError(invalid, 422);
    expect(invalid.body.parameter_errors).toEqual({ b: "Must be a number" });
  });

  verifies("envelope.answer-in-kind", "wraps tool failures too", async () => {
    const reply = await callTool(server.baseUrl, {
      request: { tool_id: "Doorbell.Ring", input: { doorbell_id: "x" } },
    });
    expect(reply.status).toBe(200);
    expect(reply.body.result).toMatchObject({ success: false, error: { message: "Doorbell ID not found" } });
  });
});
