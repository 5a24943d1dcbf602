// docs/protocol.md section 7 over HTTP: whatever a client sends, a 4xx JSON answer and a healthy server.
import { verifies } from "@otc/test-helpers/verifies";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { callTool, expectError, expectHealthy, type Reply, type Running, send, startServer } from "./harness.js";

let server: Running;
beforeAll(async () => {
  server = await startServer();
});
afterAll(() => server.close());

describe("malformed bodies", () => {
  verifies.each([
    ["broken JSON", "{not json", 400],
    ["truncated JSON", '{"tool_id": "Calculator.Add", "input": {"a": 1', 400],
    ["an empty body", "", 400],
    ["null", "null", 400],
    ["an array", "[]", 400],
    ["a string", '"Calculator.Add"', 400],
    ["a number", "42", 400],
    ["a tool_id of the wrong type", '{"tool_id": 42}', 400],
    ["input of the wrong type", '{"tool_id": "Calculator.Add", "input": [1, 2]}', 400],
    ["context of the wrong type", '{"tool_id": "Calculator.Add", "context": "x"}', 400],
    ["a secret without a value", '{"tool_id": "SMS.Send", "context": {"secrets": [{"id": "TWILIO_API_KEY"}]}}', 400],
    ["an unknown top-level field", '{"tool_id": "Calculator.Add", "inputs": {}}', 400],
    ["both flat and envelope fields", '{"tool_id": "Calculator.Add", "request": {"tool_id": "Calculator.Add"}}', 400],
    ["a BOM and garbage", "\uFEFF\u0000\u0001", 400],
  ])(
    ["request.flat-shape", "request.no-extra-properties", "call.body-checks"],
    "%s is a %i",
    async (_case, body, status) => {
      expectError(await callTool(server.baseUrl, body), status);
    },
  );

  verifies("call.body-checks", "refuses a body that is not sent as JSON with a 415", async () => {
    for (const type of [
      "text/plain",
      "application/x-www-form-urlencoded",
      "multipart/form-data; boundary=x",
      "application/xml",
    ]) {
      const reply = await send(`${server.baseUrl}/tools/call`, {
        method: "POST",
        headers: { "content-type": type },
        body: '{"tool_id": "Calculator.Add"}',
      });
      expectError(reply, 415);
    }
    const none = await send(`${server.baseUrl}/tools/call`, { method: "POST", body: '{"tool_id": "Calculator.Add"}' });
    expect([400, 415]).toContain(none.status);
  });

  verifies(
    "call.body-checks",
    "accepts application/json with parameters, and only that media type (the spec's one)",
    async () => {
      for (const type of ["application/json; charset=utf-8", "Application/JSON"]) {
        const reply = await callTool(
          server.baseUrl,
          { tool_id: "Calculator.Add", input: { a: 1, b: 2 } },
          { "content-type": type },
        );
        expect(reply.status, type).toBe(200);
      }
      const vendor = await callTool(
        server.baseUrl,
        { tool_id: "Calculator.Add" },
        { "content-type": "application/vnd.oxp+json" },
      );
      expectError(vendor, 415);
    },
  );
});

describe("large and deep bodies", () => {
  verifies("call.body-checks", "answers a body over 1 MiB with a 413", async () => {
    const reply = await callTool(server.baseUrl, {
      tool_id: "Calculator.Add",
      input: { a: "x".repeat(1_100_000), b: 1 },
    });
    expectError(reply, 413);
    await expectHealthy(server.baseUrl);
  });

  verifies(
    ["limits.nesting-depth", "limits.no-5xx-for-requests"],
    "answers deep nesting with a 400, whether it parses or not",
    async () => {
      const nested = (depth: number) => `${"[".repeat(depth)}${"]".repeat(depth)}`;
      for (const depth of [100, 10_000, 400_000]) {
        const reply = await callTool(
          server.baseUrl,
          `{"tool_id": "Calculator.Add", "input": {"a": ${nested(depth)}, "b": 1}}`,
        );
        expectError(reply, 400);
      }
      await expectHealthy(server.baseUrl);
    },
  );

  verifies(
    ["limits.no-5xx-for-requests", "limits.body-values"],
    "answers a wide input past the value bound with a 400, and one within it with a 422, quickly",
    async () => {
      const started = Date.now();
      const wide = (keys: number) => Object.fromEntries(Array.from({ length: keys }, (_, i) => [`k${i}`, i]));
      expectError(await callTool(server.baseUrl, { tool_id: "Calculator.Add", input: wide(30_000) }), 400);
      const reply = await callTool(server.baseUrl, { tool_id: "Calculator.Add", input: wide(9_000) });
      expectError(reply, 422);
      expect(Object.keys(reply.body.parameter_errors).length).toBeLessThanOrEqual(50);
      expect(Date.now() - started).toBeLessThan(5_000);
    },
  );

  it("answers a very long tool id with a 400", async () => {
    expectError(await callTool(server.baseUrl, { tool_id: `Calculator.${"A".repeat(500_000)}` }), 400);
    expectError(await callTool(server.baseUrl, { tool_id: `Calculator.Add@${"9".repeat(100_000)}` }), 400);
  });
});

describe("prototype pollution", () => {
  verifies.each([
    '{"tool_id": "Calculator.Add", "input": {"a": 1, "b": 2}, "__proto__": {"polluted": true}}',
    '{"tool_id": "Calculator.Add", "input": {"a": 1, "b": 2, "__proto__": {"polluted": true}}}',
    '{"tool_id": "Calculator.Add", "input": {"a": 1, "b": 2, "constructor": {"prototype": {"polluted": true}}}}',
    '{"tool_id": "SMS.Send", "input": {"to": "1", "message": "m"}, "context": {"secrets": [{"id": "__proto__", "value": "x"}], "__proto__": {"polluted": true}}}',
    '{"request": {"tool_id": "Calculator.Add", "input": {"a": 1, "b": 2}}, "__proto__": {"polluted": true}}',
  ])("limits.prototype-keys-are-data", "treats %s as data", async (body) => {
    const reply = await callTool(server.baseUrl, body);
    expect(reply.status).toBeGreaterThanOrEqual(400);
    expect(reply.status).toBeLessThan(500);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    expect(Object.prototype).not.toHaveProperty("polluted");
  });

  verifies("limits.prototype-keys-are-data", "keeps __proto__ as a plain key in parameter_errors", async () => {
    const reply = await callTool(
      server.baseUrl,
      '{"tool_id": "Calculator.Add", "input": {"a": 1, "b": 2, "__proto__": 1}}',
    );
    expectError(reply, 422);
    expect(reply.text).toContain('"__proto__":"Is not an allowed property"');
  });
});

describe("under load", () => {
  verifies(
    "limits.no-5xx-for-requests",
    "answers many concurrent bad requests with 4xx and stays healthy",
    async () => {
      const bodies = [
        "{",
        "[]",
        '{"tool_id": 1}',
        '{"tool_id": "X.Y"}',
        '{"tool_id": "Calculator.Add", "input": {"a": "1"}}',
      ];
      const replies: Reply[] = await Promise.all(
        Array.from({ length: 200 }, (_, i) => callTool(server.baseUrl, bodies[i % bodies.length] as string)),
      );
      for (const reply of replies) {
        expect(reply.status).toBeGreaterThanOrEqual(400);
        expect(reply.status).toBeLessThan(500);
        expect(reply.headers.get("content-type")).toMatch(/^application\/json/);
      }
      await expectHealthy(server.baseUrl);
    },
  );
});

describe("property: any JSON body", () => {
  verifies(
    ["endpoints.error-json", "limits.no-5xx-for-requests"],
    "gets a JSON answer that is 200, 400 or 422, never a 5xx",
    async () => {
      const toolIds = fc.constantFrom(
        "Calculator.Add",
        "Greeting.Hello@2",
        "Counter.Increment",
        "Doorbell.Ring",
        "Nope.X",
      );
      const body = fc.oneof(
        fc.jsonValue(),
        fc.record(
          {
            tool_id: fc.oneof(toolIds, fc.string()),
            call_id: fc.string(),
            input: fc.jsonValue(),
            context: fc.jsonValue(),
          },
          { requiredKeys: ["tool_id"] },
        ),
        fc.record({ $schema: fc.oneof(fc.constant("urn:oxp:1.0"), fc.string()), request: fc.jsonValue() }),
        fc.record({ tool_id: toolIds, input: fc.dictionary(fc.string(), fc.jsonValue()) }),
      );
      await fc.assert(
        fc.asyncProperty(body, async (value) => {
          const reply = await callTool(server.baseUrl, JSON.stringify(value) ?? "null");
          expect([200, 400, 422], reply.text).toContain(reply.status);
          expect(reply.headers.get("content-type")).toMatch(/^application\/json/);
          expect(reply.text).not.toMatch(/\n\s+at /);
        }),
        { numRuns: 300 },
      );
      await expectHealthy(server.baseUrl);
    },
  );
});
