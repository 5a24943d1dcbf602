// The bridge's catalog cache: a name it does not know re-reads GET /tools at most once per second, however often it is asked for.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js";
import { createServer, defineTool, listen, type RunningServer } from "@otc/server";
import { ManualClock } from "@otc/test-helpers/manual-clock";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createMcpBridge, type McpBridgeOptions } from "../src/bridge.js";

const echo = defineTool({
  toolkit: "Echo",
  name: "Say",
  version: "1.0.0",
  description: "Says it back.",
  inputSchema: { type: "object", properties: { text: { type: "string", description: "What to say." } } },
  outputSchema: { type: "string" },
  run: ({ text }) => text ?? "",
});

let oxp: RunningServer;
beforeAll(async () => {
  oxp = await listen(createServer({ tools: [echo], logger: false }), { port: 0 });
});
afterAll(() => oxp.close());

/** A bridge whose GET /tools requests are counted, and an SDK client connected to it in-process. */
async function bridged(options: Partial<McpBridgeOptions> = {}) {
  const listings = { count: 0 };
  const counting: typeof fetch = (input, init) => {
    const url = input instanceof Request ? input.url : String(input);
    const method = input instanceof Request ? input.method : (init?.method ?? "GET");
    if (method === "GET" && new URL(url).pathname === "/tools") {
      listings.count += 1;
    }
    return fetch(input, init);
  };
  const bridge = createMcpBridge({ url: oxp.url, fetch: counting, ...options });
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  const server = bridge.createServer();
  await server.connect(serverSide);
  const client = new Client({ name: "catalog-test", version: "1.0.0" });
  await client.connect(clientSide);
  return { client, listings, close: () => client.close() };
}

describe("unknown tool names", () => {
  it("re-read the catalog at most once per second", async () => {
    // The bridge's clock stands still unless the test moves it, however slow the machine.
    const clock = new ManualClock();
    const { client, listings, close } = await bridged({ clock });
    try {
      expect(await client.callTool({ name: "Echo_Say", arguments: { text: "hi" } })).toMatchObject({
        structuredContent: { value: "hi" },
      });
      expect(listings.count).toBe(1);
      for (let i = 0; i < 5; i++) {
        await expect(client.callTool({ name: "No_Such_Tool", arguments: {} })).rejects.toThrow(/Unknown tool/);
      }
      expect(listings.count).toBe(1);
      // A second later a miss may re-read (the tool could have been added since)...
      await clock.advance(1_001);
      await expect(client.callTool({ name: "No_Such_Tool", arguments: {} })).rejects.toThrow(/Unknown tool/);
      expect(listings.count).toBe(2);
      // ...once; and known names keep using the catalog.
      await expect(client.callTool({ name: "No_Such_Tool", arguments: {} })).rejects.toThrow(/Unknown tool/);
      await client.callTool({ name: "Echo_Say", arguments: { text: "again" } });
      expect(listings.count).toBe(2);
    } finally {
      await close();
    }
  });

  it("follow a shorter catalogTtlMs", async () => {
    const clock = new ManualClock();
    const { client, listings, close } = await bridged({ catalogTtlMs: 100, clock });
    try {
      await expect(client.callTool({ name: "No_Such_Tool", arguments: {} })).rejects.toThrow(/Unknown tool/);
      await expect(client.callTool({ name: "No_Such_Tool", arguments: {} })).rejects.toThrow(/Unknown tool/);
      expect(listings.count).toBe(1);
      await clock.advance(101);
      await expect(client.callTool({ name: "No_Such_Tool", arguments: {} })).rejects.toThrow(/Unknown tool/);
      expect(listings.count).toBe(2);
    } finally {
      await close();
    }
  });
});
