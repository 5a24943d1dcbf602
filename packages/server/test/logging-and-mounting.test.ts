// Logs (one line per call, trace ids, no secrets) and mounting the OXP app under a prefix of another Express app.
import { verifies } from "@otc/test-helpers/verifies";
import express from "express";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createLogger, createServer, listen } from "../src/index.js";
import { callTool, expectError, type Running, send, startServer } from "./harness.js";
import { TestAuthorizationProvider, testTools } from "./tools.js";

const API_KEY = "log-test-api-key-7f3c9a1e5b2d4c6a8e0f";
let server: Running;
beforeAll(async () => {
  server = await startServer({ auth: { apiKeys: [API_KEY] } });
});
afterAll(() => server.close());

describe("logs", () => {
  verifies(
    "trace.passed-and-logged",
    "write one line per call with tool id, call id, trace id, outcome and duration",
    async () => {
      await callTool(
        server.baseUrl,
        { tool_id: "Calculator.Add", call_id: "log-1", trace_id: "trace-abc", input: { a: 1, b: 2 } },
        { "OXP-API-Key": API_KEY },
      );
      const lines = server.logs().filter((line) => line.call_id === "log-1" && line.msg === "tool call");
      expect(lines).toHaveLength(1);
      expect(lines[0]).toMatchObject({
        tool_id: "Calculator.Add@1.0.0",
        call_id: "log-1",
        trace_id: "trace-abc",
        outcome: "success",
        duration_ms: expect.any(Number),
      });
    },
  );

  verifies("trace.traceparent", "take the trace id from a W3C traceparent header when the body has none", async () => {
    const traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
    await callTool(
      server.baseUrl,
      { tool_id: "Calculator.Add", call_id: "log-2", input: { a: 1, b: 2 } },
      { "OXP-API-Key": API_KEY, traceparent },
    );
    const line = server.logs().find((entry) => entry.call_id === "log-2" && entry.msg === "tool call");
    expect(line?.trace_id).toBe("4bf92f3577b34da6a3ce929d0e0e4736");
  });

  it("log rejected calls too", async () => {
    await callTool(
      server.baseUrl,
      { tool_id: "Calculator.Add", call_id: "log-3", input: {} },
      { "OXP-API-Key": API_KEY },
    );
    const line = server.logs().find((entry) => entry.call_id === "log-3");
    expect(line).toMatchObject({ outcome: "rejected", status: 422 });
  });

  verifies("requirements.secrets-never-leak", "never contain secrets, tokens or API keys", async () => {
    const secret = "SECRET-VALUE-9a8b7c6d5e4f";
    const token = "TOKEN-VALUE-1a2b3c4d5e6f";
    const headers = { "OXP-API-Key": API_KEY };
    await callTool(
      server.baseUrl,
      {
        tool_id: "SMS.Send",
        input: { to: "1", message: "m" },
        context: { secrets: [{ id: "TWILIO_API_KEY", value: secret }] },
      },
      headers,
    );
    await callTool(
      server.baseUrl,
      { tool_id: "Gmail.GetEmails", input: {}, context: { user_id: "u", authorization: [{ id: "google", token }] } },
      headers,
    );
    await callTool(
      server.baseUrl,
      { tool_id: "SMS.Send", input: { to: 1 }, context: { secrets: [{ id: "X", value: secret }] } },
      headers,
    );
    await send(`${server.baseUrl}/tools`, { headers: { "OXP-API-Key": `${API_KEY}-wrong` } });
    await send(`${server.baseUrl}/tools`, { headers: { Authorization: `Bearer ${token}` } });
    const logs = server.rawLogs();
    expect(logs.length).toBeGreaterThan(0);
    for (const value of [secret, token, API_KEY]) {
      expect(logs).not.toContain(value);
    }
  });
});

describe("mounted under a prefix", () => {
  verifies(
    "requirements.challenge-url-base",
    "serves the protocol below the prefix, with challenge links that include it",
    async () => {
      const oxp = createServer({
        tools: testTools(),
        authorizationProviders: [new TestAuthorizationProvider()],
        logger: createLogger({ level: "silent" }),
        validateResponses: true,
      });
      const host = express();
      host.get("/", (_req, res) => {
        res.send("the host app");
      });
      host.use("/oxp", oxp);
      const running = await listen(host, { port: 0, oxp: oxp.oxp });
      try {
        const base = `${running.url}/oxp`;
        expect((await send(`${base}/health`)).body).toEqual({ status: "ok" });
        expect((await send(`${base}/tools`)).body.items).toHaveLength(8);
        const sum = await callTool(base, { tool_id: "Calculator.Add", input: { a: 2, b: 3 } });
        expect(sum.body).toMatchObject({ success: true, value: 5 });
        expectError(await callTool(base, { tool_id: "Calculator.Add", input: { a: "x", b: 3 } }), 422);
        expectError(await send(`${base}/nothing-here`), 404);
        // The contract validator still sees the routes below the prefix.
        const shape = await callTool(base, { tool_id: 5 });
        expectError(shape, 400);
        expect(shape.body.message).toBe("The request does not match the OXP specification");
        const challenge = await callTool(base, { tool_id: "Gmail.GetEmails", input: {}, context: { user_id: "ann" } });
        const [first] = challenge.body.missing_requirements.authorization;
        expect(first.check_url).toBe(`${base}/authorization/challenges/${encodeURIComponent(first.id)}`);
        expect((await send(first.check_url)).body).toEqual({ status: "pending" });
        expect((await send(`${running.url}/`)).text).toBe("the host app");
      } finally {
        await running.close();
      }
    },
  );
});

describe("log lines", () => {
  it("carry each field once", () => {
    const raw = server
      .rawLogs()
      .split("\n")
      .filter((line) => line.includes('"msg":"tool call"'));
    expect(raw.length).toBeGreaterThan(0);
    for (const line of raw) {
      const keys = [...line.matchAll(/"([a-z_]+)":/g)].map((match) => match[1]);
      expect(new Set(keys).size, line).toBe(keys.length);
    }
  });
});
