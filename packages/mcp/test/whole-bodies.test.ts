// How the bridge's requests reach fetch, against a real OXP server: given no fetch, the global one gets each request's
// URL and init as @otc/client makes them (no Request); a fetch given gets the POSTs' bodies whole (bytes, not a
// Request's stream), and wholeBodies keeps a request's method, headers, redirect mode and signal.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js";
import { createServer, defineTool, listen, type RunningServer } from "@otc/server";
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { createMcpBridge } from "../src/bridge.js";
import { wholeBodies } from "../src/internal/whole-bodies.js";

const add = defineTool({
  toolkit: "Calculator",
  name: "Add",
  version: "1.0.0",
  description: "Adds two numbers.",
  inputSchema: {
    type: "object",
    properties: { a: { type: "number", description: "One." }, b: { type: "number", description: "The other." } },
    required: ["a", "b"],
  },
  outputSchema: { type: "number" },
  run: ({ a, b }) => a + b,
});

let oxp: RunningServer;
beforeAll(async () => {
  oxp = await listen(createServer({ tools: [add], logger: false }), { port: 0 });
});
afterAll(async () => {
  await oxp.close();
});
afterEach(() => {
  vi.unstubAllGlobals();
});

/** An MCP client of `bridge` over an in-memory pair, closed by `run`'s end. */
async function withClient(bridge: ReturnType<typeof createMcpBridge>, run: (client: Client) => Promise<void>) {
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  await bridge.createServer().connect(serverSide);
  const client = new Client({ name: "whole-bodies-test", version: "1.0.0" });
  await client.connect(clientSide);
  try {
    await run(client);
  } finally {
    await client.close();
  }
}

describe("the bridge given no fetch", () => {
  it("sends every request through the global fetch as a URL and an init, never a Request", async () => {
    const realFetch = globalThis.fetch;
    // What the global fetch is handed, sent on to the real one: stubbed before the bridge (and its client) is made.
    const seen: { input: string; method: string | undefined; body: string | undefined }[] = [];
    vi.stubGlobal("fetch", (input: string | URL | Request, init?: RequestInit) => {
      const body = init?.body;
      seen.push({
        input: input instanceof Request ? "a Request" : new URL(String(input)).pathname,
        method: init?.method,
        body: body === undefined ? undefined : typeof body === "string" ? "text" : "bytes",
      });
      return realFetch(input, init);
    });
    await withClient(createMcpBridge({ url: oxp.url }), async (client) => {
      expect((await client.listTools()).tools.map(({ name }) => name)).toEqual(["Calculator_Add"]);
      const result = await client.callTool({ name: "Calculator_Add", arguments: { a: 1, b: 2 } });
      expect(result.structuredContent).toEqual({ value: 3 });
    });
    expect(seen).toEqual([
      { input: "/.well-known/oxp", method: "GET", body: undefined },
      { input: "/tools", method: "GET", body: undefined },
      { input: "/tools/call", method: "POST", body: "text" },
    ]);
  });
});

describe("the bridge given a fetch", () => {
  it("hand a call's body to fetch as bytes, not as a Request's stream", async () => {
    // What the fetch the bridge was given sees of each POST: the body as fetch then writes it.
    const posted: { request: boolean; body: string }[] = [];
    const observed: typeof fetch = (input, init) => {
      const method = init?.method ?? (input instanceof Request ? input.method : "GET");
      if (method === "POST") {
        const body = init?.body;
        posted.push({
          request: input instanceof Request,
          body: body instanceof ArrayBuffer ? new TextDecoder().decode(body) : typeof body,
        });
      }
      return fetch(input, init);
    };
    await withClient(createMcpBridge({ url: oxp.url, fetch: observed }), async (client) => {
      const result = await client.callTool({ name: "Calculator_Add", arguments: { a: 1, b: 2 } });
      expect(result.structuredContent).toEqual({ value: 3 });
      expect(posted).toEqual([{ request: false, body: expect.stringContaining('"tool_id":"Calculator.Add@1.0.0"') }]);
    });
  });
});

describe("wholeBodies", () => {
  it("passes a Request's body as bytes, with its method, headers, redirect mode and signal", async () => {
    const seen: { input: unknown; init: RequestInit | undefined }[] = [];
    const base: typeof fetch = async (input, init) => {
      seen.push({ input, init });
      return new Response("{}");
    };
    const controller = new AbortController();
    const request = new Request("http://127.0.0.1:9/tools/call", {
      method: "POST",
      headers: { "content-type": "application/json", "oxp-version": "1.0" },
      body: '{"tool_id":"Calculator.Add"}',
      redirect: "manual",
      signal: controller.signal,
    });
    await wholeBodies(base)(request);
    const [{ input, init } = { input: undefined, init: undefined }] = seen;
    expect(input).toBe("http://127.0.0.1:9/tools/call");
    expect(init?.method).toBe("POST");
    expect(init?.redirect).toBe("manual");
    expect(new Headers(init?.headers).get("oxp-version")).toBe("1.0");
    expect(new TextDecoder().decode(init?.body as ArrayBuffer)).toBe('{"tool_id":"Calculator.Add"}');
    // The request's signal follows the caller's: an abort still reaches the fetch (and so the hang-up the server sees).
    controller.abort(new Error("stop"));
    expect(init?.signal?.aborted).toBe(true);
  });

  it("leaves a request without a body, or given with an init, as it is", async () => {
    const seen: unknown[][] = [];
    const base: typeof fetch = async (...args) => {
      seen.push(args);
      return new Response("{}");
    };
    const get = new Request("http://127.0.0.1:9/tools");
    await wholeBodies(base)(get);
    await wholeBodies(base)("http://127.0.0.1:9/tools/call", { method: "POST", body: "{}" });
    expect(seen[0]).toEqual([get, undefined]);
    expect(seen[1]).toEqual(["http://127.0.0.1:9/tools/call", { method: "POST", body: "{}" }]);
  });
});
