/**
 * The MCP TypeScript SDK, stateless streamable HTTP, on either generation (`config.sdk`). v1 (default,
 * @modelcontextprotocol/sdk 1.x): a new McpServer and transport per request, as its stateless example does, for 2025
 * requests. v2 (`sdk: "v2"`, @modelcontextprotocol/server 2.x): `createMcpHandler`, which builds a McpServer per
 * request itself, for 2026-07-28 requests (it serves 2025 ones too). The same tools and zod schemas on both, so two
 * rows differ by the SDK and the revision alone. `startStdio`: the v2 SDK over stdio.
 */

import * as z from "zod/v4";
import { PeerToolError, peerToolList, peerTools } from "./catalog.mjs";

/** A zod schema for the simple JSON Schemas the catalogs use (objects of primitives); anything else passes. */
function toZod(schema) {
  if (!schema || typeof schema !== "object") {
    return z.any();
  }
  switch (schema.type) {
    case "string":
      return z.string();
    case "number":
      return z.number();
    case "integer": {
      let int = z.number().int();
      if (schema.minimum !== undefined) {
        int = int.min(schema.minimum);
      }
      if (schema.maximum !== undefined) {
        int = int.max(schema.maximum);
      }
      return int;
    }
    case "boolean":
      return z.boolean();
    case "array":
      return z.array(toZod(schema.items));
    case "object": {
      const required = new Set(schema.required ?? []);
      const shape = Object.fromEntries(
        Object.entries(schema.properties ?? {}).map(([name, property]) => {
          const field = toZod(property);
          return [name, required.has(name) ? field : field.optional()];
        }),
      );
      return schema.additionalProperties === false ? z.strictObject(shape) : z.looseObject(shape);
    }
    default:
      return z.any();
  }
}

/** The catalog as MCP tools, each with its zod input schema and the runner behind it. */
function mcpToolsOf(config) {
  const list = peerToolList(config);
  const runners = peerTools(list);
  // MCP tools have no versions: one tool per name (the demo's Greeting.Hello has two versions).
  const byName = new Map();
  for (const item of list.items) {
    if (byName.has(item.name)) {
      continue;
    }
    byName.set(item.name, {
      name: item.name,
      description: item.description,
      inputSchema: toZod(item.input_schema),
      runner: runners.get(item.id),
    });
  }
  return [...byName.values()];
}

/** Registers the tools on a McpServer of either SDK (their registerTool has the same shape). */
function register(server, tools) {
  for (const tool of tools) {
    server.registerTool(tool.name, { description: tool.description, inputSchema: tool.inputSchema }, async (input) => {
      if (!tool.runner) {
        return { content: [{ type: "text", text: "{}" }] };
      }
      try {
        const value = await tool.runner.run(input);
        return { content: [{ type: "text", text: JSON.stringify(value) }] };
      } catch (error) {
        if (!(error instanceof PeerToolError)) {
          throw error;
        }
        return {
          isError: true,
          content: [{ type: "text", text: JSON.stringify({ message: error.message, ...error.fields }) }],
        };
      }
    });
  }
  return server;
}

export async function start(config) {
  // Schemas converted once; the per-request server only registers them, as an SDK user's factory would.
  const tools = mcpToolsOf(config);
  // Each generation's SDK is loaded only in its own process: the other's modules would count in its memory.
  return config.sdk === "v2" ? startV2(tools) : startV1(tools);
}

async function startV1(tools) {
  const { createMcpExpressApp } = await import("@modelcontextprotocol/sdk/server/express.js");
  const { McpServer } = await import("@modelcontextprotocol/sdk/server/mcp.js");
  const { StreamableHTTPServerTransport } = await import("@modelcontextprotocol/sdk/server/streamableHttp.js");
  const getServer = () => register(new McpServer({ name: "bench", version: "1.0.0" }), tools);

  const app = createMcpExpressApp();
  app.post("/mcp", async (req, res) => {
    let server;
    try {
      server = getServer();
      // JSON answers rather than an SSE stream: the cheaper of the transport's two modes.
      const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
      await server.connect(transport);
      res.on("close", () => {
        transport.close();
        server.close();
      });
      await transport.handleRequest(req, res, req.body);
    } catch {
      if (!res.headersSent) {
        res.status(500).json({ jsonrpc: "2.0", error: { code: -32603, message: "Internal server error" }, id: null });
      }
    }
  });
  const listening = await new Promise((resolve) => {
    const server = app.listen(0, "127.0.0.1", () => resolve(server));
  });
  return {
    url: `http://127.0.0.1:${listening.address().port}`,
    note: "MCP SDK 1.32, stateless streamable HTTP, JSON responses",
  };
}

async function startV2(tools) {
  const { createMcpHandler, McpServer } = await import("@modelcontextprotocol/server");
  const { getRequestListener } = await import("@hono/node-server");
  const { createServer } = await import("node:http");
  // Its default response mode answers in JSON unless a tool sends a notification first (none here): the v1 row's mode.
  const handler = createMcpHandler(() => register(new McpServer({ name: "bench", version: "1.0.0" }), tools));
  const listening = createServer(getRequestListener((request) => handler.fetch(request)));
  await new Promise((resolve) => listening.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${listening.address().port}`,
    note: "MCP SDK 2.4 (@modelcontextprotocol/server), createMcpHandler on @hono/node-server, 2026-07-28 requests",
  };
}

/**
 * The v2 SDK over stdio: its `serveStdio` entry (which pins one server from the factory to the connection) on this
 * process's stdin and stdout, the same tools (bench/child.mjs with `transport: "stdio"`).
 */
export async function startStdio(config) {
  const tools = mcpToolsOf(config);
  const { McpServer } = await import("@modelcontextprotocol/server");
  const { serveStdio } = await import("@modelcontextprotocol/server/stdio");
  const handle = serveStdio(() => register(new McpServer({ name: "bench", version: "1.0.0" }), tools));
  return {
    note: "MCP SDK 2.4 (@modelcontextprotocol/server), serveStdio, 2026-07-28 requests",
    stop: () => handle.close(),
  };
}
