// serveHttp's access rules: the bearer token on every request, no non-loopback host without one, the Host check.
import { request } from "node:http";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { createServer, defineTool, listen, type RunningServer } from "@otc/server";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createMcpBridge, type McpBridge } from "../src/bridge.js";
import { type HttpBridge, isLoopbackHost, serveHttp } from "../src/transports.js";

const TOKEN = "a-bearer-token-for-the-http-test";

const add = defineTool({
  toolkit: "Calculator",
  name: "Add",
  version: "1.0.0",
  description: "Adds two numbers together.",
  inputSchema: {
    type: "object",
    properties: { a: { type: "number", description: "One." }, b: { type: "number", description: "Two." } },
    required: ["a", "b"],
  },
  outputSchema: { type: "number" },
  run: ({ a, b }) => a + b,
});

let oxp: RunningServer;
let bridge: McpBridge;
beforeAll(async () => {
  oxp = await listen(createServer({ tools: [add], logger: false }), { port: 0 });
  bridge = createMcpBridge({ url: oxp.url });
});
afterAll(() => oxp.close());

/** A raw POST of tools/list, with the given headers. */
function post(
  url: string,
  headers: Record<string, string>,
): Promise<{ status: number; headers: Headers; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      {
        method: "POST",
        headers: { "content-type": "application/json", accept: "application/json, text/event-stream", ...headers },
      },
      (res) => {
        let body = "";
        res.on("data", (chunk) => {
          body += String(chunk);
        });
        res.on("end", () => {
          const out = new Headers();
          for (const [name, value] of Object.entries(res.headers)) {
            if (typeof value === "string") {
              out.set(name, value);
            }
          }
          resolve({ status: res.statusCode ?? 0, headers: out, body });
        });
      },
    );
    req.on("error", reject);
    req.end(JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" }));
  });
}

async function connect(url: string, headers: Record<string, string> = {}) {
  const client = new Client({ name: "http-test", version: "1.0.0" });
  await client.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers } }));
  return client;
}

describe("serveHttp with a token", () => {
  let http: HttpBridge;
  beforeAll(async () => {
    http = await serveHttp(bridge, { token: TOKEN });
  });
  afterAll(() => http.close());

  it.each([
    ["no Authorization", {}],
    ["a wrong token", { authorization: "Bearer a-bearer-token-for-the-http-tesT" }],
    ["the token as Basic", { authorization: `Basic ${TOKEN}` }],
    ["a prefix of the token", { authorization: `Bearer ${TOKEN.slice(0, -1)}` }],
  ])("answers %s with a 401 JSON and WWW-Authenticate: Bearer", async (_what, headers) => {
    const answer = await post(http.url, headers);
    expect(answer.status).toBe(401);
    expect(answer.headers.get("www-authenticate")).toMatch(/^Bearer\b/);
    expect(answer.headers.get("content-type")).toMatch(/application\/json/);
    expect(JSON.parse(answer.body)).toEqual({ message: expect.any(String) });
    expect(answer.body).not.toContain(TOKEN);
  });

  it("checks it before anything else: other paths and methods get a 401 too", async () => {
    expect((await fetch(http.url)).status).toBe(401);
    expect((await fetch(new URL("/other", http.url), { method: "POST" })).status).toBe(401);
  });

  it("serves an MCP client that sends it", async () => {
    const client = await connect(http.url, { authorization: `Bearer ${TOKEN}` });
    try {
      const result = await client.callTool({ name: "Calculator_Add", arguments: { a: 2, b: 3 } });
      expect(result.structuredContent).toEqual({ value: 5 });
    } finally {
      await client.close();
    }
  });

  it("still refuses a foreign Host on loopback, token or not", async () => {
    const answer = await post(http.url, { authorization: `Bearer ${TOKEN}`, host: "evil.example" });
    expect(answer.status).toBe(403);
  });
});

describe("where serveHttp listens", () => {
  it("refuses a host other than loopback without a token, before listening", async () => {
    await expect(serveHttp(bridge, { host: "0.0.0.0" })).rejects.toThrow(/needs a token/);
    await expect(serveHttp(bridge, { host: "::" })).rejects.toThrow(/needs a token/);
  });

  it("refuses a short token", async () => {
    await expect(serveHttp(bridge, { token: "short" })).rejects.toThrow(/at least 16 characters/);
  });

  it("knows loopback hosts", () => {
    for (const host of ["127.0.0.1", "127.1.2.3", "localhost", "::1", "[::1]", "::ffff:127.0.0.1"]) {
      expect(isLoopbackHost(host)).toBe(true);
    }
    for (const host of ["0.0.0.0", "::", "10.0.0.1", "example.com", "128.0.0.1", "localhost.example"]) {
      expect(isLoopbackHost(host)).toBe(false);
    }
  });

  it("refuses an Origin other than its own on loopback: a page from elsewhere reaching 127.0.0.1", async () => {
    const http = await serveHttp(bridge);
    try {
      const own = new URL(http.url).origin;
      const cases: [string, number][] = [
        [own, 200],
        [own.replace("127.0.0.1", "localhost"), 200],
        ["http://evil.example", 403],
        // Another server's page on this machine: the SDK's check alone would let it through.
        [own.replace(/:[0-9]+$/, ":1"), 403],
        [own.replace("http:", "https:"), 403],
        ["null", 403],
      ];
      for (const [origin, status] of cases) {
        expect((await post(http.url, { origin })).status, origin).toBe(status);
      }
    } finally {
      await http.close();
    }
  });

  it("answers a body over 4 MiB (the SDK's limit) with a 413, and serves the next request", async () => {
    const http = await serveHttp(bridge);
    try {
      const padding = "x".repeat(4 * 1024 * 1024);
      const tooLarge = await fetch(http.url, {
        method: "POST",
        headers: { "content-type": "application/json", accept: "application/json, text/event-stream" },
        body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list", params: { _meta: { padding } } }),
      });
      expect(tooLarge.status).toBe(413);
      expect((await post(http.url, {})).status).toBe(200);
    } finally {
      await http.close();
    }
  });

  it("serves loopback without a token, Host checked from the first request", async () => {
    const http = await serveHttp(bridge);
    try {
      const [foreign, own] = await Promise.all([post(http.url, { host: "evil.example" }), post(http.url, {})]);
      expect(foreign.status).toBe(403);
      expect(JSON.parse(foreign.body)).toEqual({ message: expect.any(String) });
      expect(own.status).toBe(200);
    } finally {
      await http.close();
    }
  });
});
