// The bridge's tools/list as MCP clients read it, byte for byte, in 2025-11-25 and 2026-07-28, from an OXP server without the cache extension: the golden files hold what the bridge answered before the tool search option and the cache fields existed, and the option adds its two meta-tools before that list.
import { readFile } from "node:fs/promises";
import { Client, StreamableHTTPClientTransport } from "@modelcontextprotocol/client";
import { createServer, defineTool, listen, type RunningServer } from "@otc/server";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createMcpBridge, type McpBridgeOptions } from "../src/bridge.js";
import { type HttpBridge, serveHttp } from "../src/transports.js";

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
  annotations: { title: "Add", read_only: true },
  run: ({ a, b }) => a + b,
});
const oldSend = defineTool({
  toolkit: "Mail",
  name: "Send",
  version: "1.0.0",
  description: "Sends an email.",
  inputSchema: { type: "object", properties: { to: { type: "string", description: "Whom to." } } },
  outputSchema: null,
  deprecationMessage: "Use Mail.Send@2.0.0.",
  run: () => undefined,
});
const send = defineTool({
  toolkit: "Mail",
  name: "Send",
  version: "2.0.0",
  description: "Sends an email to one person.",
  inputSchema: { type: "object", properties: { to: { type: "string", description: "Whom to." } } },
  outputSchema: { type: "object", properties: { id: { type: "string" } } },
  run: () => ({ id: "m-1" }),
});
/** A tool whose MCP name is `search_tools`: the meta-tools must never take it or be taken by it. */
const searchTools = defineTool({
  toolkit: "search",
  name: "tools",
  version: "1.0.0",
  description: "A tool of a toolkit that happens to be named search.",
  inputSchema: { type: "object", properties: {} },
  outputSchema: { type: "string" },
  run: () => "found",
});

const GOLDEN_TOOLS = [add, oldSend, send, searchTools];

/** The raw body of each tools/list answer a v2 SDK client got, in the revision `mode` asks for. */
async function listedBodies(url: string, mode: "legacy" | { pin: "2026-07-28" }): Promise<string[]> {
  const bodies: string[] = [];
  const recording = async (input: string | URL | Request, init?: RequestInit) => {
    const response = await fetch(input, init);
    const sent = typeof init?.body === "string" ? init.body : "";
    if (sent.includes('"tools/list"')) {
      bodies.push(await response.clone().text());
    }
    return response;
  };
  const client = new Client({ name: "golden", version: "1.0.0" }, { versionNegotiation: { mode } });
  await client.connect(new StreamableHTTPClientTransport(new URL(url), { fetch: recording }));
  try {
    await client.listTools();
  } finally {
    await client.close();
  }
  return bodies;
}

let plain: RunningServer;
beforeAll(async () => {
  // Without the cache extension: no ttl_ms to map, so the list is the one MCP clients always got.
  plain = await listen(
    createServer({ tools: GOLDEN_TOOLS, logger: false, extensions: ["annotations", "pagination", "search", "tasks"] }),
    { port: 0 },
  );
});
afterAll(() => plain.close());

async function served(options: Partial<McpBridgeOptions> = {}): Promise<HttpBridge> {
  return serveHttp(createMcpBridge({ url: plain.url, ...options }), {});
}

const GOLDEN = [
  ["2025-11-25", "latest", "legacy", "./fixtures/tools-list-2025-11-25.txt"],
  ["2026-07-28", "latest", { pin: "2026-07-28" }, "./fixtures/tools-list-2026-07-28.txt"],
  ["2026-07-28", "all", { pin: "2026-07-28" }, "./fixtures/tools-list-2026-07-28-all-versions.txt"],
] as const;

/** The JSON-RPC message of a body, whether it came as JSON or as one server-sent event. */
const messageOf = (body: string) =>
  JSON.parse(body.startsWith("{") ? body : (/^data: (.*)$/m.exec(body)?.[1] ?? "")) as {
    result: { tools: { name: string }[] };
  };

describe("tools/list without the tool search option", () => {
  it.each(GOLDEN)(
    "(%s, %s versions) is byte for byte the golden list",
    async (_revision, toolVersions, mode, golden) => {
      for (const toolSearch of [undefined, false]) {
        const http = await served({ toolVersions, ...(toolSearch === undefined ? {} : { toolSearch }) });
        try {
          const [body] = await listedBodies(http.url, mode);
          await expect(body).toMatchFileSnapshot(golden);
        } finally {
          await http.close();
        }
      }
    },
  );
});

describe("tools/list with the tool search option", () => {
  it.each(GOLDEN)(
    "(%s, %s versions) is the golden list after the two meta-tools",
    async (_revision, toolVersions, mode, golden) => {
      const http = await served({ toolVersions, toolSearch: true });
      try {
        const [body = ""] = await listedBodies(http.url, mode);
        const before = messageOf(await readFile(new URL(golden, import.meta.url), "utf8"));
        const now = messageOf(body);
        expect(now.result.tools.slice(0, 2).map((tool) => tool.name)).toEqual(["search-tools", "load-tools"]);
        expect({ ...now.result, tools: now.result.tools.slice(2) }).toEqual(before.result);
      } finally {
        await http.close();
      }
    },
  );
});
