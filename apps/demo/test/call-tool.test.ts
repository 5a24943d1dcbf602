// docs/protocol.md section 3 against the running demo: each demo tool answers, and so does each of the spec's example requests.
import { readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { specDir } from "@otc/spec";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { callTool, expectSchema, type Running, startDemo } from "./harness.js";

let server: Running;
beforeAll(async () => {
  server = await startDemo({ secrets: {} });
});
afterAll(() => server.close());

async function succeed(body: Record<string, unknown>): Promise<unknown> {
  const reply = await callTool(server.baseUrl, body);
  expect(reply.status, reply.text).toBe(200);
  expectSchema("CallToolResponse", reply.body);
  expect(reply.body.success, reply.text).toBe(true);
  return reply.body.value;
}

describe("the catalog", () => {
  it("Calculator.Add adds", async () => {
    expect(await succeed({ tool_id: "Calculator.Add@1.0.0", input: { a: 10, b: 5 } })).toBe(15);
    expect(await succeed({ tool_id: "Calculator.Add", input: { a: 0.1, b: -3 } })).toBeCloseTo(-2.9);
  });

  it("Doorbell.Ring rings a known doorbell and returns null", async () => {
    const reply = await callTool(server.baseUrl, {
      tool_id: "Doorbell.Ring@0.1.0",
      input: { doorbell_id: "doorbell42" },
    });
    expect(reply.body).toMatchObject({ success: true, value: null });
    expect(reply.text).toContain('"value":null');
  });

  it("System.GetTimestamp returns an ISO 8601 date-time without input", async () => {
    const value = (await succeed({ tool_id: "System.GetTimestamp@1.0.0" })) as { timestamp: string };
    expect(Date.parse(value.timestamp)).toBeGreaterThan(Date.now() - 60_000);
    expect(value.timestamp).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$/);
  });

  it("SMS.Send reports sent when the secret is sent", async () => {
    const value = await succeed({
      tool_id: "SMS.Send",
      input: { to: "+15550100", message: "hi" },
      context: { secrets: [{ id: "TWILIO_API_KEY", value: "k" }] },
    });
    expect(value).toEqual({ status: "sent" });
  });

  it("Gmail.GetEmails filters the sample mail when a token is sent", async () => {
    const value = (await succeed({
      tool_id: "Gmail.GetEmails",
      input: { query: "receipt" },
      context: { user_id: "ann", authorization: [{ id: "google", token: "t" }] },
    })) as { emails: { id: string }[] };
    expect(value.emails.map((email) => email.id)).toEqual(["email_2"]);
  });
});

describe("the spec's example requests", () => {
  // spec/examples/CallToolRequest holds the upstream requests in our form; each gets its expected kind of answer.
  const dir = path.join(specDir, "examples/CallToolRequest");
  const expected: Record<string, number> = {
    "calculator-add": 200,
    "doorbell-ring": 200,
    "system-get-timestamp-no-input": 200,
    "gmail-get-emails-oauth2": 200,
    "sms-send-secret": 200,
    "calculator-add-unknown-version": 400,
    "calculator-add-invalid-input": 422,
    "doorbell-ring-unknown-id": 200,
    "calculator-add-shorthand-version": 200,
    "calculator-add-latest-version": 200,
  };
  const files = readdirSync(dir).filter((file) => file.endsWith(".json"));

  it("cover every valid request example", () => {
    expect(files.map((file) => file.replace(".json", "")).sort()).toEqual(Object.keys(expected).sort());
  });

  it.each(files)("%s", async (file) => {
    const body = JSON.parse(readFileSync(path.join(dir, file), "utf8"));
    // call_ids in the examples repeat across files; each file here is its own call.
    body.call_id = `${file}-${Math.random()}`;
    const reply = await callTool(server.baseUrl, body);
    expect(reply.status, reply.text).toBe(expected[file.replace(".json", "")]);
    if (reply.status === 200) {
      expectSchema("CallToolResponse", reply.body);
    }
  });

  it("invalid request examples are 400s", async () => {
    const invalidDir = path.join(dir, "invalid");
    for (const file of readdirSync(invalidDir)) {
      const reply = await callTool(server.baseUrl, readFileSync(path.join(invalidDir, file), "utf8"));
      // Not a flat CallToolRequest, but a valid envelope: answered as one (Calculator.Add without input).
      const status = file === "wrapped-in-envelope.json" ? 422 : 400;
      expect(reply.status, `${file}: ${reply.text}`).toBe(status);
    }
  });
});
