// mcpTools against a real SDK MCP server over streamable HTTP (in-process): names, schemas with $defs, skipped tools, results and errors.
import { once } from "node:events";
import { createServer as createHttpServer, type Server as HttpServer } from "node:http";
import type { AddressInfo } from "node:net";
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import {
  CallToolRequestSchema,
  ErrorCode,
  ListToolsRequestSchema,
  McpError,
  type Tool as McpTool,
} from "@modelcontextprotocol/sdk/types.js";
import { OxpToolError, type ToolContext } from "@otc/server";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type McpTools, mcpTools } from "../src/mcp-tools.js";

const TOOLS: McpTool[] = [
  {
    name: "get-sum",
    description: "Adds.",
    inputSchema: { type: "object", properties: { a: { type: "number" }, b: { type: "number" } }, required: ["a", "b"] },
  },
  { name: "get_sum", inputSchema: { type: "object" } },
  {
    name: "ship",
    description: "Ships a parcel.",
    inputSchema: {
      type: "object",
      properties: { to: { $ref: "#/$defs/Address" } },
      $defs: { Address: { type: "object", properties: { city: { type: "string" } } } },
    },
    outputSchema: { type: "object", properties: { tracking: { type: "string" } }, required: ["tracking"] },
  },
  {
    name: "tree",
    description: "Takes a tree.",
    inputSchema: {
      type: "object",
      properties: { root: { $ref: "#/$defs/Node" } },
      $defs: { Node: { type: "object", properties: { kids: { type: "array", items: { $ref: "#/$defs/Node" } } } } },
    },
  },
  { name: "fail", description: "Always fails.", inputSchema: { type: "object" } },
  { name: "refuse", description: "Answers a protocol error.", inputSchema: { type: "object" } },
];

/** A tool server of its own, the SDK's low-level Server, stateless over node:http. */
async function startMcpServer(): Promise<{ url: string; http: HttpServer }> {
  const http = createHttpServer(async (req, res) => {
    const server = new Server({ name: "fixture", version: "1.0.0" }, { capabilities: { tools: {} } });
    server.setRequestHandler(ListToolsRequestSchema, () => ({ tools: TOOLS }));
    server.setRequestHandler(CallToolRequestSchema, ({ params }) => {
      const args = (params.arguments ?? {}) as Record<string, unknown>;
      switch (params.name) {
        case "get-sum":
          return { content: [{ type: "text", text: String(Number(args.a) + Number(args.b)) }] };
        case "ship":
          return {
            content: [{ type: "text", text: "shipped" }],
            structuredContent: { tracking: `T-${(args.to as { city: string }).city}` },
          };
        case "fail":
          return { isError: true, content: [{ type: "text", text: "The parcel is lost." }] };
        default:
          throw new McpError(ErrorCode.InvalidParams, "Not today");
      }
    });
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
    res.once("close", () => void server.close());
    await server.connect(transport);
    await transport.handleRequest(req, res);
  });
  http.listen(0, "127.0.0.1");
  await once(http, "listening");
  return { url: `http://127.0.0.1:${(http.address() as AddressInfo).port}/mcp`, http };
}

const context = (): ToolContext => ({
  callId: "c",
  traceId: undefined,
  userId: undefined,
  tokens: {},
  secrets: {},
  extra: {},
  signal: new AbortController().signal,
  logger: { debug() {}, info() {}, warn() {}, error() {} },
  progress() {},
});

let mcp: { url: string; http: HttpServer };
let tools: McpTools;
beforeAll(async () => {
  mcp = await startMcpServer();
  tools = await mcpTools({ url: mcp.url }, { toolkit: "Fixture", version: "2.1.0" });
});
afterAll(async () => {
  await tools?.close();
  mcp.http.close();
  mcp.http.closeAllConnections();
});

const byName = (name: string) => {
  const tool = tools.tools.find((candidate) => candidate.name === name);
  if (!tool) {
    throw new Error(`no tool ${name} in ${tools.tools.map((candidate) => candidate.name)}`);
  }
  return tool;
};

describe("mcpTools over streamable HTTP", () => {
  it("makes names unique and valid, and skips what OXP cannot express", () => {
    expect(tools.tools.map((tool) => tool.name).sort()).toEqual(["Fail", "GetSum", "GetSum_2", "Refuse", "Ship"]);
    expect(tools.names.get("Fixture.GetSum@2.1.0")).toBe("get-sum");
    expect(tools.names.get("Fixture.GetSum_2@2.1.0")).toBe("get_sum");
    expect(tools.skipped).toEqual([{ name: "tree", reason: expect.stringMatching(/recursive/) }]);
    for (const tool of tools.tools) {
      expect(tool.toolkit).toBe("Fixture");
      expect(tool.version).toBe("2.1.0");
      expect(tool.description).not.toBe("");
    }
  });

  it("inlines $defs, describes properties and keeps the output schema", () => {
    const ship = byName("Ship");
    expect(ship.inputSchema).toEqual({
      type: "object",
      properties: {
        to: { type: "object", properties: { city: { type: "string" } }, description: "The to parameter." },
      },
    });
    expect(ship.outputSchema).toEqual({
      type: "object",
      properties: { tracking: { type: "string" } },
      required: ["tracking"],
    });
    expect(byName("GetSum").outputSchema).toEqual({});
  });

  it("runs tools: text as the value, structuredContent as the value, isError and MCP errors as OxpToolError", async () => {
    expect(await byName("GetSum").run({ a: 2, b: 5 }, context())).toBe("7");
    expect(await byName("Ship").run({ to: { city: "Oslo" } }, context())).toEqual({ tracking: "T-Oslo" });
    await expect(byName("Fail").run({}, context())).rejects.toThrow(new OxpToolError("The parcel is lost."));
    const refused = byName("Refuse").run({}, context());
    await expect(refused).rejects.toBeInstanceOf(OxpToolError);
    await expect(refused).rejects.toThrow(/Not today/);
  });

  it("refuses a toolkit or version OXP would not take", async () => {
    await expect(mcpTools({ url: mcp.url }, { toolkit: "Bad.Kit", version: "1.0.0" })).rejects.toThrow(RangeError);
    await expect(mcpTools({ url: mcp.url }, { toolkit: "Kit", version: "1.0" })).rejects.toThrow(RangeError);
  });
});
