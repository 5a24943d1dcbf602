// mcpTools against MCP servers of both generations over streamable HTTP on loopback: a 2026-07-28 server written
// here with @modelcontextprotocol/server 2.4 (McpServer, createMcpHandler's stateless HTTP), a 2025 one with the
// v1 SDK (@modelcontextprotocol/sdk), and a hostile 2025 server whose tool list never ends.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { fileURLToPath } from "node:url";
import { Server as V1Server } from "@modelcontextprotocol/sdk/server/index.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { CallToolRequestSchema, ListToolsRequestSchema } from "@modelcontextprotocol/sdk/types.js";
import { createMcpHandler, fromJsonSchema, type McpHttpHandler, McpServer } from "@modelcontextprotocol/server";
import { createClient, type OxpClient } from "@otc/client";
import { type McpTools, mcpTools } from "@otc/mcp";
import { createServer as createOxpServer, listen, type RunningServer } from "@otc/server";
import { ManualClock } from "@otc/test-helpers/manual-clock";
import { until } from "@otc/test-helpers/until";
import type { CallProgress, CallToolResponse } from "@otc/types";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";

const API_KEY = "mcp-v2-over-oxp-key-0123456789";

/** Servers and connections to end after each test, latest first. */
const opened: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const close of opened.splice(0).reverse()) {
    await close();
  }
});

/** A node:http server on 127.0.0.1 port 0, closed after the test (or the file, with `keep`). */
async function loopback(
  handle: (req: IncomingMessage, res: ServerResponse) => Promise<void>,
  keep?: (close: () => Promise<void>) => void,
): Promise<{ url: string; server: Server }> {
  const server = createServer((req, res) => {
    handle(req, res).catch(() => res.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const close = () =>
    new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    });
  (keep ?? ((fn) => opened.push(fn)))(close);
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`, server };
}

async function bodyOf(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) {
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks);
}

/**
 * The v2 SDK's fetch-shaped handler on node:http (its own adapter, @modelcontextprotocol/node, is not a
 * dependency): a client that goes away aborts the Request, which is how a 2026-07-28 call is cancelled.
 */
function nodeListener(handler: McpHttpHandler, seen: IncomingMessage["headers"][]) {
  return async (req: IncomingMessage, res: ServerResponse) => {
    const body = await bodyOf(req);
    seen.push(req.headers);
    const gone = new AbortController();
    res.on("close", () => {
      if (!res.writableFinished) {
        gone.abort();
      }
    });
    const headers = new Headers();
    for (const [name, value] of Object.entries(req.headers)) {
      if (typeof value === "string") {
        headers.set(name, value);
      }
    }
    const response = await handler.fetch(
      new Request(`http://127.0.0.1${req.url}`, {
        method: req.method,
        headers,
        ...(body.length > 0 ? { body } : {}),
        signal: gone.signal,
      }),
    );
    res.writeHead(response.status, Object.fromEntries(response.headers));
    if (response.body) {
      for await (const chunk of response.body) {
        res.write(chunk);
      }
    }
    res.end();
  };
}

/** What the 2026-07-28 fixture's handlers saw: the counter's steps, and whether its call was cancelled. */
const counted: { steps: number; aborted: boolean }[] = [];

/** How many steps of `count` the test lets run; a step past them waits until it may, or its request is aborted. */
let released = 0;
const releasing = new Set<() => void>();

/** Lets `count` run its steps up to `steps`: a gate the test opens, instead of a step every N ms. */
function release(steps: number): void {
  released = steps;
  for (const wake of [...releasing]) {
    wake();
  }
}

/** The 2026-07-28 fixture: a fresh McpServer per request, as createMcpHandler's stateless serving wants. */
function v2Server(): McpServer {
  const server = new McpServer({ name: "v2-fixture", version: "1.0.0" });
  server.registerTool(
    "echo-text",
    {
      title: "Echo",
      description: "Echoes a message.",
      inputSchema: fromJsonSchema<{ message: string }>({
        type: "object",
        properties: { message: { type: "string", description: "What to echo." } },
        required: ["message"],
      }),
      annotations: { readOnlyHint: true, openWorldHint: false },
    },
    async ({ message }) => ({ content: [{ type: "text", text: `Echo: ${message}` }] }),
  );
  server.registerTool(
    "divide",
    {
      description: "Divides a by b.",
      inputSchema: fromJsonSchema<{ a: number; b: number }>({
        type: "object",
        properties: { a: { type: "number" }, b: { type: "number" } },
        required: ["a", "b"],
      }),
      outputSchema: fromJsonSchema({
        type: "object",
        properties: { quotient: { type: "number" } },
        required: ["quotient"],
      }),
    },
    async ({ a, b }) =>
      b === 0
        ? { isError: true, content: [{ type: "text", text: "Cannot divide by zero." }] }
        : { content: [{ type: "text", text: String(a / b) }], structuredContent: { quotient: a / b } },
  );
  server.registerTool(
    "count",
    {
      description: "Counts to `to`, a step whenever the test lets it, reporting progress.",
      inputSchema: fromJsonSchema<{ to: number }>({
        type: "object",
        properties: { to: { type: "integer", minimum: 1 } },
        required: ["to"],
      }),
    },
    async ({ to }, ctx) => {
      const record = { steps: 0, aborted: false };
      counted.push(record);
      const signal = ctx.mcpReq.signal;
      const token = ctx.mcpReq._meta?.progressToken;
      for (let step = 1; step <= to; step++) {
        // The step's listeners go with it: fifty steps must not pile fifty listeners onto one signal.
        await new Promise<void>((resolve) => {
          const done = () => {
            releasing.delete(look);
            signal.removeEventListener("abort", done);
            resolve();
          };
          const look = () => {
            if (released >= step) {
              done();
            }
          };
          releasing.add(look);
          signal.addEventListener("abort", done, { once: true });
          look();
        });
        if (signal.aborted) {
          record.aborted = true;
          return { isError: true, content: [{ type: "text", text: "cancelled" }] };
        }
        record.steps = step;
        if (token !== undefined) {
          await ctx.mcpReq.notify({
            method: "notifications/progress",
            params: { progressToken: token, progress: step, total: to, message: `step ${step}` },
          });
        }
      }
      return { content: [{ type: "text", text: `Counted to ${to}.` }] };
    },
  );
  return server;
}

describe("mcpTools and a 2026-07-28 server (MCP SDK v2, stateless HTTP)", () => {
  const seen: IncomingMessage["headers"][] = [];
  let handler: McpHttpHandler;
  let fixture: McpTools;
  let server: RunningServer;
  let client: OxpClient;
  const closing: (() => Promise<void>)[] = [];
  // Each test opens the counter's gate as far as it needs; none is left open for the next.
  beforeEach(() => release(0));
  beforeAll(async () => {
    // `reject`: no 2025 fallback on this endpoint, so a client that did not speak 2026-07-28 gets nothing.
    handler = createMcpHandler(v2Server, { legacy: "reject" });
    const { url } = await loopback(nodeListener(handler, seen), (close) => closing.push(close));
    fixture = await mcpTools({ url }, { toolkit: "Fixture", version: "2.0.0", timeoutMs: 1_000 });
    server = await listen(
      createOxpServer({ tools: fixture.tools, auth: { apiKeys: [API_KEY] }, logger: false, validateResponses: true }),
      { port: 0 },
    );
    client = createClient({ baseUrl: server.url, apiKey: API_KEY, retry: { maxAttempts: 1 } });
  });
  afterAll(async () => {
    await server?.close();
    await fixture?.close();
    await handler?.close();
    await Promise.all(closing.map((close) => close()));
  });

  it("negotiates 2026-07-28: no initialize, every request carries the revision", async () => {
    expect(fixture.client.getProtocolEra()).toBe("modern");
    expect(fixture.client.getNegotiatedProtocolVersion()).toBe("2026-07-28");
    expect(seen.length).toBeGreaterThan(0);
    for (const headers of seen) {
      expect(headers["mcp-protocol-version"]).toBe("2026-07-28");
      expect(headers["mcp-method"]).not.toBe("initialize");
    }
    expect(fixture.skipped).toEqual([]);
  });

  it("lists its tools with their schemas, descriptions and annotations", async () => {
    const listed = await client.listTools({ annotations: true });
    const byId = new Map(listed.map((tool) => [tool.id, tool]));
    expect([...byId.keys()].sort()).toEqual(["Fixture.Count@2.0.0", "Fixture.Divide@2.0.0", "Fixture.EchoText@2.0.0"]);
    expect(fixture.names.get("Fixture.EchoText@2.0.0")).toBe("echo-text");
    const echo = byId.get("Fixture.EchoText@2.0.0");
    expect(echo?.description).toBe("Echoes a message.");
    expect(echo?.input_schema).toMatchObject({
      type: "object",
      properties: { message: { type: "string", description: "What to echo." } },
      required: ["message"],
    });
    expect(echo?.annotations).toEqual({ title: "Echo", read_only: true, open_world: false });
    expect(byId.get("Fixture.Divide@2.0.0")?.output_schema).toMatchObject({
      type: "object",
      properties: { quotient: { type: "number" } },
    });
  });

  it("calls a tool: its text is the value", async () => {
    expect(await client.callTool({ tool_id: "Fixture.EchoText", input: { message: "hi" } })).toMatchObject({
      success: true,
      value: "Echo: hi",
    });
  });

  it("takes structuredContent as the value, and an isError result as a tool error with its text", async () => {
    expect(await client.callTool({ tool_id: "Fixture.Divide", input: { a: 6, b: 4 } })).toMatchObject({
      success: true,
      value: { quotient: 1.5 },
    });
    expect(await client.callTool({ tool_id: "Fixture.Divide", input: { a: 1, b: 0 } })).toMatchObject({
      success: false,
      error: { message: "Cannot divide by zero." },
    });
  });

  it("ends the MCP call at the tool's time limit: the server's handler sees its request aborted", async () => {
    // An OXP server on a clock the test moves: the tool's time limit (1 s) passes when the test says, and the counter
    // takes no step meanwhile; nothing else could end the call.
    const clock = new ManualClock();
    const timed = await listen(
      createOxpServer({ tools: fixture.tools, logger: false, validateResponses: true, clock }),
      { port: 0 },
    );
    try {
      const before = counted.length;
      const response = createClient({ baseUrl: timed.url, retry: { maxAttempts: 1 } }).callTool({
        tool_id: "Fixture.Count",
        input: { to: 50 },
      });
      await until(() => counted.length > before, { what: "the MCP server to run the call" });
      await clock.advance(1_000);
      expect(await response).toMatchObject({ success: false, error: { can_retry: true } });
      await until(() => counted[before]?.aborted === true, { what: "the MCP server's handler to see the abort" });
      expect(counted[before]?.steps).toBeLessThan(50);
    } finally {
      await timed.close();
    }
  });

  it("runs a call asynchronously: the server's progress on the event stream, DELETE cancels it on the server", async () => {
    const before = counted.length;
    // Two steps, then the counter waits: the call runs until the DELETE.
    release(2);
    const headers = { "OXP-API-Key": API_KEY, "OXP-Extensions": "tasks" };
    const accepted = await fetch(`${server.url}/tools/call`, {
      method: "POST",
      headers: { ...headers, Prefer: "respond-async", "content-type": "application/json" },
      body: JSON.stringify({ tool_id: "Fixture.Count", input: { to: 50 } }),
    });
    expect(accepted.status).toBe(202);
    const location = accepted.headers.get("location") as string;
    const events = readEvents(await fetch(`${location}/events`, { headers }));
    let last: CallProgress | undefined;
    while (!(last && last.progress >= 2)) {
      const event = await events.next();
      expect(event.done).toBe(false);
      if (event.value?.event === "progress") {
        last = event.value.data as CallProgress;
      }
    }
    expect(last).toMatchObject({ total: 50, message: `step ${last.progress}` });

    const cancelled = await fetch(location, { method: "DELETE", headers });
    expect(await cancelled.json()).toMatchObject({ status: "cancelled" });
    let result: CallToolResponse | undefined;
    for await (const event of events) {
      if (event.event === "result") {
        result = event.data as CallToolResponse;
      }
    }
    expect(result).toMatchObject({ success: false, error: { can_retry: false } });
    // On the MCP side: the request's stream closed, the handler's signal fired well before its 50 steps.
    await until(() => counted[before]?.aborted === true, { what: "the MCP server's handler to see the abort" });
    expect(counted[before]?.steps).toBeLessThan(50);
    // Stateless: the next call is a request like any other.
    expect(await client.callTool({ tool_id: "Fixture.EchoText", input: { message: "still here" } })).toMatchObject({
      success: true,
      value: "Echo: still here",
    });
  });
});

describe("mcpTools and a v2 server over stdio", () => {
  const fixture = fileURLToPath(new URL("./v2-stdio-server.ts", import.meta.url));
  const source = (mode: "modern-only" | "both") => ({
    command: process.execPath,
    args: ["--import", "tsx", fixture, mode],
    cwd: fileURLToPath(new URL("..", import.meta.url)),
    stderr: "ignore" as const,
  });

  it("reaches 2026-07-28 through the SDK's probe, and calls in it (the server refuses 2025)", async () => {
    // The probe's process must start (node, tsx) before it answers; on a busy machine that can take longer than the
    // default 10 s, and the server, then taken for a 2025 one, would refuse the handshake. This limit only guards a
    // hang: the server always answers the probe.
    const v2 = await mcpTools(source("modern-only"), {
      toolkit: "Stdio",
      version: "1.0.0",
      stdioProbeTimeoutMs: 60_000,
    });
    opened.push(() => v2.close());
    expect(v2.client.getProtocolEra()).toBe("modern");
    expect(v2.client.getNegotiatedProtocolVersion()).toBe("2026-07-28");
    const reverse = v2.tools.find((tool) => tool.name === "Reverse");
    expect(reverse?.inputSchema).toMatchObject({ properties: { text: { description: "What to reverse." } } });
    const server = await listen(createOxpServer({ tools: v2.tools, logger: false, validateResponses: true }), {
      port: 0,
    });
    opened.push(() => server.close());
    expect(
      await createClient({ baseUrl: server.url }).callTool({ tool_id: "Stdio.Reverse", input: { text: "stressed" } }),
    ).toMatchObject({ success: true, value: "desserts" });
  });

  it("speaks 2025 with `versionNegotiation: legacy`, to a v2 server that serves both", async () => {
    const v2 = await mcpTools(source("both"), { toolkit: "Stdio", version: "1.0.0", versionNegotiation: "legacy" });
    opened.push(() => v2.close());
    expect(v2.client.getProtocolEra()).toBe("legacy");
    expect(v2.tools.map((tool) => tool.name)).toEqual(["Reverse"]);
  });
});

describe("mcpTools and other servers over HTTP", () => {
  it("sends no probe with `versionNegotiation: legacy`: the 2025 handshake, to a v2 server that serves both", async () => {
    const seen: IncomingMessage["headers"][] = [];
    const handler = createMcpHandler(v2Server, { legacy: "stateless" });
    opened.push(() => handler.close());
    const { url } = await loopback(nodeListener(handler, seen));
    const legacy = await mcpTools({ url }, { toolkit: "Fixture", version: "1.0.0", versionNegotiation: "legacy" });
    opened.push(() => legacy.close());
    expect(legacy.client.getProtocolEra()).toBe("legacy");
    // The probe would have carried 2026-07-28 in its header.
    expect(seen.length).toBeGreaterThan(0);
    expect(seen.some((headers) => headers["mcp-protocol-version"] === "2026-07-28")).toBe(false);
    expect(legacy.tools.map((tool) => tool.name).sort()).toEqual(["Count", "Divide", "EchoText"]);
  });

  it("speaks 2025 to a v1 SDK server (stateless streamable HTTP), after the 2026-07-28 probe", async () => {
    const methods: string[] = [];
    const { url } = await loopback(async (req, res) => {
      const body = await bodyOf(req);
      const message = body.length > 0 ? JSON.parse(body.toString()) : undefined;
      methods.push(message?.method ?? req.method);
      const mcp = new V1Server({ name: "v1-fixture", version: "1.0.0" }, { capabilities: { tools: {} } });
      mcp.setRequestHandler(ListToolsRequestSchema, () => ({
        tools: [{ name: "shout", description: "Upper-cases text.", inputSchema: { type: "object", properties: {} } }],
      }));
      mcp.setRequestHandler(CallToolRequestSchema, (request) => ({
        content: [{ type: "text", text: String(request.params.arguments?.text ?? "").toUpperCase() }],
      }));
      const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
      await mcp.connect(transport);
      await transport.handleRequest(req, res, message);
    });
    const v1 = await mcpTools({ url }, { toolkit: "Old", version: "1.0.0" });
    opened.push(() => v1.close());
    expect(v1.client.getProtocolEra()).toBe("legacy");
    expect(v1.client.getNegotiatedProtocolVersion()).toMatch(/^2025-/);
    expect(methods.slice(0, 2)).toEqual(["server/discover", "initialize"]);
    expect(v1.tools.map((tool) => `${tool.toolkit}.${tool.name}`)).toEqual(["Old.Shout"]);
    const server = await listen(createOxpServer({ tools: v1.tools, logger: false, validateResponses: true }), {
      port: 0,
    });
    opened.push(() => server.close());
    const response = await createClient({ baseUrl: server.url }).callTool({
      tool_id: "Old.Shout",
      input: { text: "quiet" },
    });
    expect(response).toMatchObject({ success: true, value: "QUIET" });
  });

  it("gives up on a tool list whose pages never end, instead of reading it forever", async () => {
    let pages = 0;
    const { url } = await loopback(async (req, res) => {
      const message = JSON.parse((await bodyOf(req)).toString() || "null");
      const answer = (reply: { result: unknown } | { error: unknown }) => {
        res
          .writeHead(200, { "content-type": "application/json" })
          .end(JSON.stringify({ jsonrpc: "2.0", id: message.id, ...reply }));
      };
      switch (message?.method) {
        case "initialize":
          answer({
            result: {
              protocolVersion: "2025-11-25",
              capabilities: { tools: {} },
              serverInfo: { name: "endless", version: "1.0.0" },
            },
          });
          break;
        case "tools/list":
          pages++;
          answer({
            result: {
              tools: [{ name: `tool-${pages}`, inputSchema: { type: "object" } }],
              nextCursor: `page-${pages}`,
            },
          });
          break;
        case "server/discover":
          // A 2025 server does not know the method.
          answer({ error: { code: -32601, message: "Method not found" } });
          break;
        default:
          res.writeHead(202).end();
      }
    });
    await expect(mcpTools({ url }, { toolkit: "Endless", version: "1.0.0" })).rejects.toThrow();
    // The SDK's cap, 64 pages; the old page loop asked for the next one forever.
    expect(pages).toBeGreaterThan(1);
    expect(pages).toBeLessThanOrEqual(65);
  });
});

/** The events of a `text/event-stream` answer as they come, `data` parsed as JSON. */
async function* readEvents(response: Response): AsyncGenerator<{ event?: string; data: unknown }> {
  const decoder = new TextDecoder();
  let buffered = "";
  for await (const chunk of response.body as ReadableStream<Uint8Array>) {
    buffered += decoder.decode(chunk, { stream: true });
    for (let end = buffered.indexOf("\n\n"); end >= 0; end = buffered.indexOf("\n\n")) {
      const fields: Record<string, string> = {};
      for (const line of buffered.slice(0, end).split("\n")) {
        const colon = line.indexOf(":");
        if (colon > 0) {
          fields[line.slice(0, colon)] = line.slice(colon + 1).trimStart();
        }
      }
      buffered = buffered.slice(end + 2);
      if (fields.data !== undefined) {
        yield { event: fields.event, data: JSON.parse(fields.data) };
      }
    }
  }
}
