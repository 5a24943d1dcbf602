// MCP to OXP with the search extension: a real 2026-07-28 MCP server (the v2 SDK's, over streamable HTTP on loopback) read by mcpTools and served by @otc/server, whose index of those tools answers q=, ids= and /toolkits.
import { once } from "node:events";
import { createServer as createHttpServer, type Server as HttpServer } from "node:http";
import type { AddressInfo } from "node:net";
import { getRequestListener } from "@hono/node-server";
import { createMcpHandler, type McpHttpHandler, Server, type Tool } from "@modelcontextprotocol/server";
import { createClient, type OxpClient } from "@otc/client";
import { createServer, listen, type RunningServer } from "@otc/server";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type McpTools, mcpTools } from "../src/mcp-tools.js";

const path = { type: "string", description: "A path inside the allowed directories." } as const;

/** Tools shaped as the reference filesystem server's (@modelcontextprotocol/server-filesystem) lists them. */
const FILESYSTEM: Tool[] = [
  {
    name: "read_text_file",
    description: "Read the complete contents of a file from the file system as text.",
    inputSchema: {
      type: "object",
      properties: { path, head: { type: "number", description: "Only the first N lines." } },
      required: ["path"],
    },
    annotations: { readOnlyHint: true },
  },
  {
    name: "write_file",
    description: "Create a new file or completely overwrite an existing file with new content.",
    inputSchema: {
      type: "object",
      properties: { path, content: { type: "string", description: "The text to write." } },
      required: ["path", "content"],
    },
  },
  {
    name: "list_directory",
    description: "Get a detailed listing of all files and directories in a specified path.",
    inputSchema: { type: "object", properties: { path }, required: ["path"] },
    annotations: { readOnlyHint: true },
  },
  {
    name: "move_file",
    description: "Move files and directories, or give them a new name.",
    inputSchema: {
      type: "object",
      properties: {
        source: path,
        destination: { $ref: "#/$defs/Target" },
      },
      required: ["source", "destination"],
      $defs: { Target: { type: "string", description: "Where it goes: the new path, which must not exist yet." } },
    },
  },
  {
    name: "get_file_info",
    description: "Retrieve detailed metadata about a file or directory: size, times, permissions.",
    inputSchema: { type: "object", properties: { path }, required: ["path"] },
    annotations: { readOnlyHint: true },
  },
];

const DESCRIPTION = "Secure file operations within allowed directories.";

/** The fixture: the v2 SDK's low-level Server, one per request as createMcpHandler's stateless serving wants. */
function filesystemServer(description: string | undefined): Server {
  const server = new Server(
    { name: "filesystem", version: "0.6.3", ...(description === undefined ? {} : { description }) },
    { capabilities: { tools: {} } },
  );
  server.setRequestHandler("tools/list", () => ({ tools: FILESYSTEM }));
  server.setRequestHandler("tools/call", ({ params }) => ({
    content: [{ type: "text", text: `${params.name} done` }],
  }));
  return server;
}

/** What the fixture describes itself with, for the next requests. */
let described: string | undefined = DESCRIPTION;
let handler: McpHttpHandler;
let mcpHttp: HttpServer;
let mcpUrl: string;
let fs: McpTools;
let oxp: RunningServer;
let client: OxpClient;
beforeAll(async () => {
  handler = createMcpHandler(() => filesystemServer(described), { legacy: "stateless" });
  mcpHttp = createHttpServer(getRequestListener((request) => handler.fetch(request)));
  mcpHttp.listen(0, "127.0.0.1");
  await once(mcpHttp, "listening");
  mcpUrl = `http://127.0.0.1:${(mcpHttp.address() as AddressInfo).port}/mcp`;
  fs = await mcpTools({ url: mcpUrl }, { toolkit: "Fs", version: "1.0.0" });
  oxp = await listen(createServer({ tools: fs.tools, toolkits: fs.toolkits, logger: false }), { port: 0 });
  client = createClient({ baseUrl: oxp.url });
});
afterAll(async () => {
  await oxp?.close();
  await fs?.close();
  await handler?.close();
  mcpHttp?.closeAllConnections();
  mcpHttp?.close();
});

/** The ids of a search's matches, best first. */
const found = async (q: string) => (await client.searchTools(q, { view: "summary" })).items.map((item) => item.id);

describe("an MCP server's tools searched over OXP", () => {
  it("are read in 2026-07-28 and all served", () => {
    expect(fs.client.getProtocolEra()).toBe("modern");
    expect(fs.skipped).toEqual([]);
    expect(fs.tools).toHaveLength(FILESYSTEM.length);
  });

  it.each([
    ["words of the name and description", "move a file to a new name", "Fs.MoveFile@1.0.0"],
    ["words of its description only", "completely overwrite", "Fs.WriteFile@1.0.0"],
    ["other words of its description only", "permissions and times", "Fs.GetFileInfo@1.0.0"],
    ["the MCP name's words", "list directory", "Fs.ListDirectory@1.0.0"],
    ["the OXP name, exactly", "GetFileInfo", "Fs.GetFileInfo@1.0.0"],
    ["a parameter's description only, inlined from $defs", "must not exist yet", "Fs.MoveFile@1.0.0"],
  ])("rank first the tool that %s name (%s)", async (_what, q, best) => {
    const ids = await found(q);
    expect(ids[0]).toBe(best);
  });

  it("answer each match with its toolkit and a score, best first, and a summary without schemas", async () => {
    const { items } = await client.searchTools("file", { view: "summary" });
    expect(items.length).toBeGreaterThan(1);
    for (const item of items) {
      expect(item.toolkit).toBe("Fs");
      expect(item.score).toBeGreaterThan(0);
      expect(item).not.toHaveProperty("input_schema");
    }
    const scores = items.map((item) => item.score);
    expect(scores).toEqual([...scores].sort((a, b) => b - a));
    // The annotations the MCP server gave, with the matches.
    const read = items.find((item) => item.id === "Fs.ReadTextFile@1.0.0");
    expect(read?.annotations).toEqual({ read_only: true });
  });

  it("give no match for words no tool has", async () => {
    expect(await found("zebra")).toEqual([]);
  });

  it("answer ids= with the definitions in the order asked", async () => {
    const tools = await client.getTools(["Fs.MoveFile", "Fs.ReadTextFile@1.0.0"]);
    expect(tools.map((tool) => tool.id)).toEqual(["Fs.MoveFile@1.0.0", "Fs.ReadTextFile@1.0.0"]);
    expect(tools[0]?.input_schema).toMatchObject({
      properties: { destination: { type: "string", description: expect.stringMatching(/must not exist yet/) } },
    });
  });

  it("list the toolkit in /toolkits with the MCP server's description", async () => {
    expect(fs.toolkits).toEqual({ Fs: { description: DESCRIPTION } });
    expect(await client.listToolkits()).toEqual([{ name: "Fs", description: DESCRIPTION, tool_count: 5 }]);
  });
});

describe("the toolkit's description", () => {
  it.each([
    ["none", undefined, undefined],
    ["a blank one", "  ", undefined],
    // 998 letters, then an emoji (two UTF-16 code units) across the 999th: cut before it, never in half.
    ["one past 1,000 characters, cut", `${"a".repeat(998)}\u{1F4C1}${"b".repeat(500)}`, `${"a".repeat(998)}…`],
  ])("from an MCP server with %s is what OXP takes", async (_what, description, expected) => {
    described = description;
    const other = await mcpTools({ url: mcpUrl }, { toolkit: "Other", version: "1.0.0" });
    try {
      expect(other.toolkits).toEqual(expected === undefined ? {} : { Other: { description: expected } });
      // createServer takes it: a description OXP refused would stop the server's start.
      const served = await listen(createServer({ tools: other.tools, toolkits: other.toolkits, logger: false }), {
        port: 0,
      });
      await served.close();
    } finally {
      described = DESCRIPTION;
      await other.close();
    }
  });
});
