/**
 * Test fixture: an MCP server over stdio built with the v2 SDK (@modelcontextprotocol/server), run with `node --import
 * tsx`. With `modern-only` it refuses 2025 openings, so only a client that reached 2026-07-28 is served.
 */
import { fromJsonSchema, McpServer } from "@modelcontextprotocol/server";
import { serveStdio } from "@modelcontextprotocol/server/stdio";

serveStdio(
  () => {
    const server = new McpServer({ name: "v2-stdio-fixture", version: "1.0.0" });
    server.registerTool(
      "reverse",
      {
        description: "Reverses a text.",
        inputSchema: fromJsonSchema<{ text: string }>({
          type: "object",
          properties: { text: { type: "string", description: "What to reverse." } },
          required: ["text"],
        }),
      },
      async ({ text }) => ({ content: [{ type: "text", text: [...text].reverse().join("") }] }),
    );
    return server;
  },
  { legacy: process.argv[2] === "modern-only" ? "reject" : "serve" },
);
