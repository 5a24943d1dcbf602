// mcpTools against a hostile MCP server on loopback (the v1 SDK's Server over stateless streamable HTTP): schemas whose
// `$ref`s double at each level, tool names past what OXP allows, schemas nested too deep or pointing nowhere. Each
// such tool is skipped with its reason; the others are served by a real OXP server.
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { Server as V1Server } from "@modelcontextprotocol/sdk/server/index.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import {
  CallToolRequestSchema,
  ListToolsRequestSchema,
  type Tool as McpTool,
} from "@modelcontextprotocol/sdk/types.js";
import { createClient } from "@otc/client";
import { type McpToolsOptions, mcpTools } from "@otc/mcp";
import { createServer as createOxpServer, listen } from "@otc/server";
import { cfworkerValidators } from "@otc/server/validation/cfworker";
import { afterEach, describe, expect, it } from "vitest";

/** Servers and connections to end after each test, latest first. */
const opened: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const close of opened.splice(0).reverse()) {
    await close();
  }
});

async function bodyOf(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) {
    chunks.push(chunk as Buffer);
  }
  return Buffer.concat(chunks);
}

/** An MCP server (2025, stateless streamable HTTP) on 127.0.0.1 port 0 listing `tools`; `echo` answers its message. */
async function mcpServer(tools: McpTool[]): Promise<string> {
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    (async () => {
      const body = await bodyOf(req);
      const mcp = new V1Server({ name: "hostile", version: "1.0.0" }, { capabilities: { tools: {} } });
      mcp.setRequestHandler(ListToolsRequestSchema, () => ({ tools }));
      mcp.setRequestHandler(CallToolRequestSchema, (request) => ({
        content: [{ type: "text", text: `Echo: ${String(request.params.arguments?.message ?? "")}` }],
      }));
      const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
      await mcp.connect(transport);
      await transport.handleRequest(req, res, body.length > 0 ? JSON.parse(body.toString()) : undefined);
    })().catch(() => res.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  opened.push(
    () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  );
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`;
}

const echo: McpTool = {
  name: "echo",
  description: "Echoes a message.",
  inputSchema: { type: "object", properties: { message: { type: "string", description: "What to echo." } } },
};

/**
 * A schema of `levels` definitions, each an object with two properties pointing at the one below: about 90 bytes a
 * level, and 2^levels copies of the bottom one once inlined (30 levels: 2.9 KB, about 60 GB inlined).
 */
function doubling(levels: number): McpTool["inputSchema"] {
  const $defs: Record<string, object> = { L0: { type: "string" } };
  for (let i = 1; i <= levels; i++) {
    $defs[`L${i}`] = {
      type: "object",
      properties: { a: { $ref: `#/$defs/L${i - 1}` }, b: { $ref: `#/$defs/L${i - 1}` } },
    };
  }
  return { type: "object", properties: { x: { $ref: `#/$defs/L${levels}` } }, $defs };
}

/** A flat list of `levels` definitions, each an object whose one property points at the one below: nested `levels` deep once inlined. */
function chain(levels: number): McpTool["inputSchema"] {
  const $defs: Record<string, object> = { L0: { type: "string" } };
  for (let i = 1; i <= levels; i++) {
    $defs[`L${i}`] = { type: "object", properties: { a: { $ref: `#/$defs/L${i - 1}` } } };
  }
  return { type: "object", properties: { x: { $ref: `#/$defs/L${levels}` } }, $defs };
}

/** Serves `tools` over OXP on loopback, closed after the test; a client of it. */
async function serveOverOxp(tools: Parameters<typeof createOxpServer>[0]["tools"]) {
  const server = await listen(createOxpServer({ tools, logger: false, validateResponses: true }), { port: 0 });
  opened.push(() => server.close());
  return createClient({ baseUrl: server.url, retry: { maxAttempts: 1 } });
}

describe("mcpTools and a hostile MCP server", () => {
  it("skips a tool whose $refs double at each level, without building them, and serves the others", async () => {
    const levels = 30;
    const schema = doubling(levels);
    expect(JSON.stringify(schema).length).toBeLessThan(3_000);
    const url = await mcpServer([
      echo,
      { name: "doubling", description: "Takes a gigabyte schema.", inputSchema: schema },
      {
        name: "doubling-output",
        description: "Returns something described by a gigabyte schema.",
        inputSchema: { type: "object" },
        outputSchema: doubling(levels),
      },
    ]);
    // Without a bound the inlined schema doubled with each level: 21 levels made 124 MB in 10 s, 30 would be 60 GB.
    const hostile = await mcpTools({ url }, { toolkit: "Hostile", version: "1.0.0" });
    opened.push(() => hostile.close());
    expect(hostile.skipped).toEqual([
      { name: "doubling", reason: expect.stringMatching(/input schema .*too large.*262144 characters/) },
    ]);
    // An output schema past the bound is not described, as one that cannot be inlined: the tool is served.
    expect(hostile.tools.map((tool) => [tool.name, tool.outputSchema])).toEqual([
      ["DoublingOutput", {}],
      ["Echo", {}],
    ]);
    const client = await serveOverOxp(hostile.tools);
    expect((await client.listTools()).map((tool) => tool.id)).toEqual([
      "Hostile.DoublingOutput@1.0.0",
      "Hostile.Echo@1.0.0",
    ]);
    expect(await client.callTool({ tool_id: "Hostile.Echo", input: { message: "still here" } })).toMatchObject({
      success: true,
      value: "Echo: still here",
    });
  });

  it("skips a tool whose id the OXP server would refuse (a 300-character name), so the server starts and serves the rest", async () => {
    const long = `long-${"a".repeat(295)}`;
    const url = await mcpServer([
      echo,
      { name: long, description: "Has a long name.", inputSchema: { type: "object" } },
    ]);
    const hostile = await mcpTools({ url }, { toolkit: "Hostile", version: "1.0.0" });
    opened.push(() => hostile.close());
    expect(hostile.skipped).toEqual([
      // The OXP server's own words: its id is past the ToolId schema's 256 characters.
      {
        name: long,
        reason: expect.stringMatching(/^the OXP server would refuse it: Tool 'Hostile\.Long.*ToolDefinition schema/),
      },
    ]);
    expect(hostile.tools.map((tool) => tool.name)).toEqual(["Echo"]);
    expect([...hostile.names]).toEqual([["Hostile.Echo@1.0.0", "echo"]]);
    const client = await serveOverOxp(hostile.tools);
    expect((await client.listTools()).map((tool) => tool.id)).toEqual(["Hostile.Echo@1.0.0"]);
    expect(await client.callTool({ tool_id: "Hostile.Echo", input: { message: "hi" } })).toMatchObject({
      success: true,
      value: "Echo: hi",
    });
  });

  it("skips a tool the server's validator would refuse (a format it does not know), as createServer would", async () => {
    const url = await mcpServer([
      echo,
      {
        name: "odd-format",
        description: "Takes a string in a format nobody knows.",
        inputSchema: { type: "object", properties: { when: { type: "string", format: "stardate" } } },
      },
      {
        name: "count",
        description: "Takes an int32, a format Ajv checks and cfworker does not.",
        inputSchema: { type: "object", properties: { n: { type: "integer", format: "int32" } } },
      },
    ]);
    const hostile = await mcpTools({ url }, { toolkit: "Hostile", version: "1.0.0" });
    opened.push(() => hostile.close());
    expect(hostile.skipped).toEqual([
      { name: "odd-format", reason: expect.stringMatching(/would refuse it: .*format this server does not know/) },
    ]);
    expect((await (await serveOverOxp(hostile.tools)).listTools()).map((tool) => tool.id)).toEqual([
      "Hostile.Count@1.0.0",
      "Hostile.Echo@1.0.0",
    ]);
    // For a server that validates with cfworker, the tools it would refuse.
    const cfworker = await mcpTools(
      { url },
      { toolkit: "Hostile", version: "1.0.0", inputValidator: cfworkerValidators() },
    );
    opened.push(() => cfworker.close());
    expect(cfworker.skipped.map((tool) => tool.name)).toEqual(["count", "odd-format"]);
    const server = await listen(
      createOxpServer({ tools: cfworker.tools, inputValidator: cfworkerValidators(), logger: false }),
      {
        port: 0,
      },
    );
    opened.push(() => server.close());
    expect((await createClient({ baseUrl: server.url }).listTools()).map((tool) => tool.id)).toEqual([
      "Hostile.Echo@1.0.0",
    ]);
  });

  it("skips a schema nested past the depth bound or pointing at a broken pointer, instead of failing the whole start", async () => {
    const url = await mcpServer([
      echo,
      // 210 KB of definitions, 120 KB inlined: under the size bound, but deep enough to exhaust the stack of a
      // recursive walk (the old inlining's, and the OXP server's checks').
      { name: "deep", description: "Nests 3,000 levels deep once inlined.", inputSchema: chain(3_000) },
      {
        name: "broken-pointer",
        description: "Points at a broken percent-encoding.",
        inputSchema: { type: "object", properties: { a: { $ref: "#/$defs/%E0%A4%A" } }, $defs: {} },
      },
    ]);
    const hostile = await mcpTools({ url }, { toolkit: "Hostile", version: "1.0.0" });
    opened.push(() => hostile.close());
    expect(hostile.skipped).toEqual([
      { name: "broken-pointer", reason: expect.stringMatching(/not a local definition/) },
      { name: "deep", reason: expect.stringMatching(/nests deeper than 256 levels/) },
    ]);
    expect(hostile.tools.map((tool) => tool.name)).toEqual(["Echo"]);
  });

  it("bounds one schema by maxSchemaChars and all of them together by maxTotalSchemaChars", async () => {
    // Each of these inlines to about 1,900 characters (5 levels: 32 copies of the bottom definition).
    const tools: McpTool[] = ["a", "b", "c"].map((name) => ({
      name,
      description: `Tool ${name}.`,
      inputSchema: doubling(5),
    }));
    const url = await mcpServer([echo, ...tools]);
    const one = await mcpTools({ url }, { toolkit: "Bounded", version: "1.0.0", maxSchemaChars: 1_000 });
    opened.push(() => one.close());
    expect(one.skipped.map(({ name, reason }) => [name, reason])).toEqual(
      ["a", "b", "c"].map((name) => [name, expect.stringMatching(/too large.*more than 1000 characters/)]),
    );
    expect(one.tools.map((tool) => tool.name)).toEqual(["Echo"]);

    // Room for two of the three (in code-point order); the third spends the rest, and the tools after it get none.
    const total = await mcpTools({ url }, { toolkit: "Bounded", version: "1.0.0", maxTotalSchemaChars: 4_000 });
    opened.push(() => total.close());
    expect(total.tools.map((tool) => tool.name)).toEqual(["A", "B"]);
    expect(total.skipped).toEqual(
      ["c", "echo"].map((name) => ({ name, reason: expect.stringMatching(/together would pass 4000 characters/) })),
    );

    const bad: Partial<McpToolsOptions>[] = [
      { maxSchemaChars: 0 },
      { maxTotalSchemaChars: 1.5 },
      { timeoutMs: -1 },
      { inputValidator: "fast" as unknown as McpToolsOptions["inputValidator"] },
    ];
    for (const options of bad) {
      await expect(mcpTools({ url }, { toolkit: "Bounded", version: "1.0.0", ...options })).rejects.toThrow(RangeError);
    }
  });
});
