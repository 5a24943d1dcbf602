// mcpTools against a real SDK MCP server over streamable HTTP (in-process): names, schemas with $defs, skipped tools, results and errors, annotations, progress and cancellation.
import { randomUUID } from "node:crypto";
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
import { createServer, listen, OxpToolError, type ToolContext } from "@otc/server";
import { until } from "@otc/test-helpers/until";
import type { CallProgress } from "@otc/types";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type McpTools, mcpTools } from "../src/mcp-tools.js";

const TOOLS: McpTool[] = [
  {
    name: "get-sum",
    title: "Add two numbers",
    description: "Adds.",
    inputSchema: { type: "object", properties: { a: { type: "number" }, b: { type: "number" } }, required: ["a", "b"] },
    annotations: { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false },
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
    annotations: { title: "Ship a parcel", destructiveHint: false, openWorldHint: true },
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
  {
    name: "slow",
    description: "Reports two steps of four, then waits to be cancelled.",
    inputSchema: { type: "object" },
    // Read-only and destructive at once: MCP ignores the second for a read-only tool; OXP refuses the pair.
    annotations: { readOnlyHint: true, destructiveHint: true },
  },
];

/** What the fixture server saw of its `slow` calls: the progress token sent, and the reason of each cancellation. */
const slowCalls: { progressToken: unknown; cancelled: Promise<string> }[] = [];

/** The fixture's tool server, the SDK's low-level Server (one per session, so a cancellation reaches the call it names). */
function fixtureServer(): Server {
  const server = new Server({ name: "fixture", version: "1.0.0" }, { capabilities: { tools: {} } });
  server.setRequestHandler(ListToolsRequestSchema, () => ({ tools: TOOLS }));
  server.setRequestHandler(CallToolRequestSchema, async ({ params }, extra) => {
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
      case "slow": {
        const progressToken = extra._meta?.progressToken;
        const cancelled = new Promise<string>((resolve) =>
          extra.signal.addEventListener("abort", () => resolve(String(extra.signal.reason)), { once: true }),
        );
        slowCalls.push({ progressToken, cancelled });
        if (progressToken !== undefined) {
          for (const progress of [1, 2]) {
            await extra.sendNotification({
              method: "notifications/progress",
              params: { progressToken, progress, total: 4, message: `Step ${progress} of 4` },
            });
          }
        }
        await cancelled;
        return { content: [{ type: "text", text: "Too late." }] };
      }
      default:
        throw new McpError(ErrorCode.InvalidParams, "Not today");
    }
  });
  return server;
}

/** The fixture over streamable HTTP with sessions, on node:http. */
async function startMcpServer(): Promise<{ url: string; http: HttpServer }> {
  const sessions = new Map<string, StreamableHTTPServerTransport>();
  const http = createHttpServer(async (req, res) => {
    const id = req.headers["mcp-session-id"];
    let transport = typeof id === "string" ? sessions.get(id) : undefined;
    if (!transport) {
      const created = new StreamableHTTPServerTransport({
        sessionIdGenerator: randomUUID,
        onsessioninitialized: (sessionId) => {
          sessions.set(sessionId, created);
        },
      });
      await fixtureServer().connect(created);
      transport = created;
    }
    await transport.handleRequest(req, res);
  });
  http.listen(0, "127.0.0.1");
  await once(http, "listening");
  return { url: `http://127.0.0.1:${(http.address() as AddressInfo).port}/mcp`, http };
}

const context = (signal = new AbortController().signal, progress: CallProgress[] = []): ToolContext => ({
  callId: "c",
  traceId: undefined,
  userId: undefined,
  tokens: {},
  secrets: {},
  extra: {},
  signal,
  logger: { debug() {}, info() {}, warn() {}, error() {} },
  progress(update) {
    progress.push(update);
  },
});

let mcp: { url: string; http: HttpServer };
let tools: McpTools;
beforeAll(async () => {
  mcp = await startMcpServer();
  tools = await mcpTools({ url: mcp.url }, { toolkit: "Fixture", version: "2.1.0" });
});
afterAll(async () => {
  await tools?.close();
  mcp.http.closeAllConnections();
  mcp.http.close();
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
    expect(tools.tools.map((tool) => tool.name).sort()).toEqual([
      "Fail",
      "GetSum",
      "GetSum_2",
      "Refuse",
      "Ship",
      "Slow",
    ]);
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

  it("refuses a toolkit, version or probe time limit it could not use", async () => {
    await expect(mcpTools({ url: mcp.url }, { toolkit: "Bad.Kit", version: "1.0.0" })).rejects.toThrow(RangeError);
    await expect(mcpTools({ url: mcp.url }, { toolkit: "Kit", version: "1.0" })).rejects.toThrow(RangeError);
    await expect(
      mcpTools({ url: mcp.url }, { toolkit: "Kit", version: "1.0.0", stdioProbeTimeoutMs: 0 }),
    ).rejects.toThrow(/stdioProbeTimeoutMs/);
  });

  it("refuses a URL nothing listens on at once: no process to wait for after the failed probe", async () => {
    const gone = createHttpServer();
    gone.listen(0, "127.0.0.1");
    await once(gone, "listening");
    const { port } = gone.address() as AddressInfo;
    await new Promise((resolve) => gone.close(resolve));
    const startedAt = Date.now();
    await expect(
      mcpTools({ url: `http://127.0.0.1:${port}/mcp` }, { toolkit: "Gone", version: "1.0.0" }),
    ).rejects.toThrow(/fetch failed/);
    // A wait for a process that is not there took 5 s.
    expect(Date.now() - startedAt).toBeLessThan(2_500);
  });
});

describe("annotations", () => {
  it("carries MCP's title and hints as OXP annotations, dropping destructive on a read-only tool", () => {
    expect(byName("GetSum").annotations).toEqual({
      title: "Add two numbers",
      read_only: true,
      destructive: false,
      idempotent: true,
      open_world: false,
    });
    expect(byName("Ship").annotations).toEqual({ title: "Ship a parcel", destructive: false, open_world: true });
    expect(byName("Slow").annotations).toEqual({ read_only: true });
    expect(byName("GetSum_2").annotations).toBeUndefined();
  });

  it("are taken by an OXP server and listed to a client that asks for them", async () => {
    const oxp = await listen(createServer({ tools: tools.tools, logger: false }), { port: 0 });
    try {
      const answer = await fetch(`${oxp.url}/tools`, { headers: { "OXP-Extensions": "annotations" } });
      expect(answer.headers.get("oxp-extensions")).toBe("annotations");
      const listed = ((await answer.json()) as { items: { id: string; annotations?: unknown }[] }).items;
      const byId = new Map(listed.map((tool) => [tool.id, tool]));
      expect(byId.get("Fixture.GetSum@2.1.0")?.annotations).toEqual(byName("GetSum").annotations);
      expect(byId.get("Fixture.Slow@2.1.0")?.annotations).toEqual({ read_only: true });
      expect(byId.get("Fixture.GetSum_2@2.1.0")).not.toHaveProperty("annotations");
    } finally {
      await oxp.close();
    }
  });
});

describe("progress and cancellation", () => {
  it("sends a progress token, reports each progress notification, and cancels the MCP request on abort", async () => {
    const controller = new AbortController();
    const progress: CallProgress[] = [];
    const calls = slowCalls.length;
    const run = Promise.resolve(byName("Slow").run({}, context(controller.signal, progress)));
    run.catch(() => undefined);
    await until(() => progress.length === 2, { what: "the MCP server's two progress notifications" });
    expect(progress).toEqual([
      { progress: 1, total: 4, message: "Step 1 of 4" },
      { progress: 2, total: 4, message: "Step 2 of 4" },
    ]);
    const call = slowCalls[calls];
    expect(call?.progressToken).toBeDefined();
    controller.abort(new Error("Stopped by the test"));
    await expect(run).rejects.toThrow();
    // The MCP server's own handler saw notifications/cancelled, with the reason.
    expect(await call?.cancelled).toContain("Stopped by the test");
  });

  it("over OXP: an asynchronous call shows the MCP server's progress, and DELETE cancels the MCP request", async () => {
    const oxp = await listen(createServer({ tools: tools.tools, logger: false }), { port: 0 });
    const TASKS = { "OXP-Extensions": "tasks" };
    try {
      const calls = slowCalls.length;
      const accepted = await fetch(`${oxp.url}/tools/call`, {
        method: "POST",
        headers: { ...TASKS, Prefer: "respond-async", "content-type": "application/json" },
        body: JSON.stringify({ tool_id: "Fixture.Slow", input: {}, call_id: "slow-1" }),
      });
      expect(accepted.status).toBe(202);
      const location = accepted.headers.get("location") as string;
      type Status = { status: string; progress?: CallProgress; result?: { success: boolean; error?: unknown } };
      let status: Status | undefined;
      // The server keeps a few updates a second, the latest of each interval: step 2 arrives within one.
      await until(
        async () => {
          const answer = await fetch(location, { headers: { ...TASKS, Prefer: "wait=2" } });
          status = (await answer.json()) as Status;
          return status.progress?.progress === 2;
        },
        { what: "step 2 in the call's status" },
      );
      expect(status).toMatchObject({ status: "running", progress: { progress: 2, total: 4, message: "Step 2 of 4" } });

      const cancelled = await fetch(location, { method: "DELETE", headers: TASKS });
      expect(cancelled.status).toBe(200);
      expect(await cancelled.json()).toMatchObject({
        call_id: "slow-1",
        status: "cancelled",
        result: { success: false, error: { can_retry: false } },
      });
      expect(await slowCalls[calls]?.cancelled).toBeTruthy();
      // The MCP connection is still good.
      expect(await byName("GetSum").run({ a: 1, b: 1 }, context())).toBe("2");
    } finally {
      await oxp.close();
    }
  });
});
