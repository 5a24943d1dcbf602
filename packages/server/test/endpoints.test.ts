// docs/protocol.md sections 1, 2 and 6 over HTTP: endpoints, headers, versions, tool definitions.
import { verifies } from "@otc/test-helpers/verifies";
import { afterAll, beforeAll, describe, expect } from "vitest";
import { listen } from "../src/index.js";
import { expectError, expectSchema, makeServer, type Running, send, startServer } from "./harness.js";

let server: Running;
beforeAll(async () => {
  server = await startServer();
});
afterAll(() => server.close());

describe("GET /health", () => {
  verifies("endpoints.health", "answers 200 JSON with OXP-Version, without authentication", async () => {
    const reply = await send(`${server.baseUrl}/health`);
    expect(reply.status).toBe(200);
    expect(reply.headers.get("oxp-version")).toBe("1.0");
    expect(reply.body).toEqual({ status: "ok" });
  });
});

describe("GET /tools", () => {
  verifies(
    "endpoints.list-tools",
    "lists exactly the catalog it was given, in order, every definition valid",
    async () => {
      const reply = await send(`${server.baseUrl}/tools`);
      expect(reply.status).toBe(200);
      expect(reply.headers.get("oxp-version")).toBe("1.0");
      expectSchema("ToolListResponse", reply.body);
      expect(reply.body.items.map((tool: { id: string }) => tool.id)).toEqual([
        "Calculator.Add@1.0.0",
        "Doorbell.Ring@0.1.0",
        "Gmail.GetEmails@1.2.0",
        "SMS.Send@0.1.2",
        "Greeting.Hello@1.0.0",
        "Greeting.Hello@2.0.0",
        "Counter.Increment@1.0.0",
        "System.Sleep@1.0.0",
      ]);
    },
  );

  verifies("endpoints.list-tools", "answers an empty items array when the server has no tools", async () => {
    const empty = await listen(makeServer({ tools: [], validateResponses: true }), { port: 0 });
    try {
      const reply = await send(`${empty.url}/tools`);
      expect(reply.status).toBe(200);
      expect(reply.body).toEqual({ items: [] });
    } finally {
      await empty.close();
    }
  });

  verifies(
    ["definitions.fields", "definitions.id-and-version", "definitions.name-pattern", "definitions.input-schema-flat"],
    "writes definitions in the flat form with the name convention and the version in the id",
    async () => {
      const { body } = await send(`${server.baseUrl}/tools`);
      for (const tool of body.items) {
        expect(tool.id).toBe(`${tool.name.replace("_", ".")}@${tool.version}`);
        expect(tool.input_schema).not.toHaveProperty("parameters");
        for (const property of Object.values<Record<string, unknown>>(tool.input_schema.properties ?? {})) {
          expect(property.description).toEqual(expect.any(String));
        }
      }
      const doorbell = body.items.find((tool: { id: string }) => tool.id === "Doorbell.Ring@0.1.0");
      expect(doorbell.output_schema).toBeNull();
      const gmail = body.items.find((tool: { id: string }) => tool.id === "Gmail.GetEmails@1.2.0");
      expect(gmail.requirements).toEqual({
        authorization: [{ id: "google", oauth2: { scopes: ["https://www.googleapis.com/auth/gmail.readonly"] } }],
        user_id: true,
      });
    },
  );

  verifies("endpoints.lenient-get", "ignores unknown query parameters and a body sent with GET", async () => {
    const plain = await send(`${server.baseUrl}/tools`);
    const odd = await send(`${server.baseUrl}/tools?page=2&x=%00`, {
      method: "GET",
      headers: { "content-type": "application/json" },
    });
    expect(odd.status).toBe(200);
    expect(odd.body).toEqual(plain.body);
  });
});

describe("errors outside the routes", () => {
  verifies(
    ["endpoints.oxp-version-header", "endpoints.unknown-route", "endpoints.error-json"],
    "answers an unknown path with a 404 JSON error carrying OXP-Version",
    async () => {
      expectError(await send(`${server.baseUrl}/nope`), 404);
      expectError(await send(`${server.baseUrl}/tools/call/extra`, { method: "POST" }), 404);
    },
  );

  verifies.each([
    ["DELETE", "/tools", "GET, HEAD"],
    ["POST", "/tools", "GET, HEAD"],
    ["GET", "/tools/call", "POST"],
    ["PUT", "/tools/call", "POST"],
    ["OPTIONS", "/tools/call", "POST"],
    ["POST", "/health", "GET, HEAD"],
    ["DELETE", "/authorization/challenges/x", "GET, HEAD"],
  ])("endpoints.unknown-route", "answers %s %s with 405 and Allow: %s", async (method, path, allow) => {
    const reply = await send(`${server.baseUrl}${path}`, { method });
    expectError(reply, 405);
    expect(reply.headers.get("allow")).toBe(allow);
  });

  verifies("endpoints.unknown-route", "answers HEAD like GET, without a body", async () => {
    const reply = await send(`${server.baseUrl}/tools`, { method: "HEAD" });
    expect(reply.status).toBe(200);
    expect(reply.text).toBe("");
    expect(reply.headers.get("oxp-version")).toBe("1.0");
  });
});

describe("OXP-Version", () => {
  verifies.each(["1.0", "1", "1.0.0"])("versions.header-optional", "accepts %s", async (version) => {
    const reply = await send(`${server.baseUrl}/tools`, { headers: { "OXP-Version": version } });
    expect(reply.status).toBe(200);
  });

  verifies.each(["2.0", "abc", "0.9", "1.1", ""])(
    "versions.unsupported-400",
    "refuses %j with a 400 that lists the supported versions",
    async (version) => {
      const reply = await send(`${server.baseUrl}/tools`, { headers: { "OXP-Version": version } });
      expectError(reply, 400);
      expect(reply.body.message).toMatch(/OXP version .* is not supported/);
      expect(reply.body.developer_message).toContain("1.0, 1, 1.0.0");
    },
  );

  verifies("versions.header-optional", "applies to every endpoint", async () => {
    expectError(await send(`${server.baseUrl}/health`, { headers: { "OXP-Version": "2.0" } }), 400);
    const call = await send(`${server.baseUrl}/tools/call`, {
      method: "POST",
      headers: { "OXP-Version": "9", "content-type": "application/json" },
      body: JSON.stringify({ tool_id: "Calculator.Add", input: { a: 1, b: 2 } }),
    });
    expectError(call, 400);
  });
});
