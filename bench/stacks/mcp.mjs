/** The MCP TypeScript SDK, stateless streamable HTTP: a new McpServer and transport per request, as its stateless example does. */

import { createMcpExpressApp } from "@modelcontextprotocol/sdk/server/express.js";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
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

export async function start(config) {
  const list = peerToolList(config);
  const runners = peerTools(list);
  // Schemas converted once; the per-request server only registers them, as an SDK user's factory would.
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
  const tools = [...byName.values()];
  const getServer = () => {
    const server = new McpServer({ name: "bench", version: "1.0.0" });
    for (const tool of tools) {
      server.registerTool(
        tool.name,
        { description: tool.description, inputSchema: tool.inputSchema },
        async (input) => {
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
        },
      );
    }
    return server;
  };

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
