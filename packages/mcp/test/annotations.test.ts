// Tool annotations both ways: MCP's title and hints as OXP annotations, OXP's annotations and deprecations as MCP tools list them.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js";
import type { Tool as McpTool } from "@modelcontextprotocol/sdk/types.js";
import { createServer, defineTool, listen, type RunningServer } from "@otc/server";
import { type ToolAnnotations, type ToolDefinition, validateToolAnnotations } from "@otc/types";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { catalogToMcpTools, createMcpBridge, TOOL_ID_META_KEY } from "../src/bridge.js";
import {
  DEPRECATION_META_KEY,
  mcpDescription,
  toMcpAnnotations,
  toOxpAnnotations,
} from "../src/internal/annotations.js";

type McpSide = Pick<McpTool, "title" | "annotations">;

describe("toOxpAnnotations", () => {
  const long = "x".repeat(250);
  const cases: [string, McpSide, ToolAnnotations | undefined][] = [
    ["nothing", {}, undefined],
    ["empty annotations", { annotations: {} }, undefined],
    [
      "every hint, under its OXP name",
      { annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: true, openWorldHint: true } },
      { read_only: false, destructive: false, idempotent: true, open_world: true },
    ],
    ["the tool's title", { title: "Echo" }, { title: "Echo" }],
    ["annotations.title when the tool has none", { annotations: { title: "Old echo" } }, { title: "Old echo" }],
    ["the tool's title before annotations.title", { title: "Echo", annotations: { title: "Old" } }, { title: "Echo" }],
    ["a blank title left out, the other one used", { title: "  ", annotations: { title: "Old" } }, { title: "Old" }],
    ["a title trimmed", { title: " Echo " }, { title: "Echo" }],
    ["a title past 200 characters cut, with an ellipsis", { title: long }, { title: `${"x".repeat(199)}…` }],
    [
      "read-only and destructive: destructive dropped (MCP ignores it there, OXP refuses the pair)",
      { annotations: { readOnlyHint: true, destructiveHint: true, idempotentHint: true } },
      { read_only: true, idempotent: true },
    ],
    [
      "read-only and not destructive: kept",
      { annotations: { readOnlyHint: true, destructiveHint: false } },
      { read_only: true, destructive: false },
    ],
    [
      "hints that are not booleans left out",
      {
        annotations: {
          readOnlyHint: "yes",
          openWorldHint: 0,
          idempotentHint: true,
        } as unknown as McpSide["annotations"],
      },
      { idempotent: true },
    ],
  ];
  it.each(cases)("%s", (_name, given, want) => {
    const got = toOxpAnnotations(given);
    expect(got).toEqual(want);
    if (got !== undefined) {
      expect(validateToolAnnotations(got)).toBe(true);
    }
  });
});

describe("toMcpAnnotations", () => {
  const cases: [string, ToolAnnotations | undefined, McpTool["annotations"]][] = [
    ["none", undefined, undefined],
    ["empty", {}, undefined],
    [
      "every field, under its MCP name",
      { title: "Send an SMS", read_only: false, destructive: true, idempotent: false, open_world: true },
      { title: "Send an SMS", readOnlyHint: false, destructiveHint: true, idempotentHint: false, openWorldHint: true },
    ],
    ["absent hints stay absent (the same defaults)", { read_only: true }, { readOnlyHint: true }],
  ];
  it.each(cases)("%s", (_name, given, want) => {
    expect(toMcpAnnotations(given)).toEqual(want);
  });
});

describe("mcpDescription", () => {
  it("starts a deprecated tool's description with what to use instead", () => {
    expect(mcpDescription({ description: "Greets." })).toBe("Greets.");
    expect(mcpDescription({ description: "Greets.", deprecation_message: "Use Greeting.Hello@2.0.0." })).toBe(
      "Deprecated: Use Greeting.Hello@2.0.0.\n\nGreets.",
    );
  });
});

const definition = (version: string, extra: Partial<ToolDefinition> = {}): ToolDefinition => ({
  id: `Greeting.Hello@${version}`,
  name: "Hello",
  version,
  description: "Greets.",
  input_schema: { type: "object", properties: {} },
  output_schema: { type: "string" },
  ...extra,
});

describe("catalogToMcpTools", () => {
  it("lists each version with its own title, hints and deprecation", () => {
    const entries = catalogToMcpTools(
      [
        definition("1.0.0", {
          annotations: { title: "Say hello", read_only: true },
          deprecation_message: "Use Greeting.Hello@2.0.0.",
        }),
        definition("2.0.0", { annotations: { title: "Say hello, in French too", read_only: true } }),
      ],
      "all",
    );
    expect(entries.get("Greeting_Hello")?.tool).toEqual({
      name: "Greeting_Hello",
      title: "Say hello, in French too",
      description: "Greets.",
      inputSchema: { type: "object", properties: {} },
      outputSchema: expect.any(Object),
      annotations: { title: "Say hello, in French too", readOnlyHint: true },
      _meta: { [TOOL_ID_META_KEY]: "Greeting.Hello@2.0.0" },
    });
    expect(entries.get("Greeting_Hello_v1_0_0")?.tool).toMatchObject({
      title: "Say hello",
      description: "Deprecated: Use Greeting.Hello@2.0.0.\n\nGreets.",
      annotations: { title: "Say hello", readOnlyHint: true },
      _meta: { [TOOL_ID_META_KEY]: "Greeting.Hello@1.0.0", [DEPRECATION_META_KEY]: "Use Greeting.Hello@2.0.0." },
    });
  });

  it("lists a definition without them as before: no title, no annotations", () => {
    const tool = catalogToMcpTools([definition("1.0.0")]).get("Greeting_Hello")?.tool;
    expect(tool).not.toHaveProperty("title");
    expect(tool).not.toHaveProperty("annotations");
    expect(tool?._meta).toEqual({ [TOOL_ID_META_KEY]: "Greeting.Hello@1.0.0" });
  });
});

const tools = [
  defineTool({
    toolkit: "Sms",
    name: "Send",
    version: "1.0.0",
    description: "Sends a text message.",
    inputSchema: { type: "object", properties: { to: { type: "string", description: "The number." } } },
    outputSchema: null,
    annotations: { title: "Send an SMS", destructive: true, open_world: true },
    deprecationMessage: "Use Sms.Send@2.0.0.",
    run: () => undefined,
  }),
  defineTool({
    toolkit: "Clock",
    name: "Now",
    version: "1.0.0",
    description: "The time.",
    inputSchema: {},
    outputSchema: { type: "string" },
    run: () => new Date().toISOString(),
  }),
];

/** An SDK client connected in-process to a bridge for `url`. */
async function bridged(url: string) {
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  await createMcpBridge({ url }).createServer().connect(serverSide);
  const client = new Client({ name: "annotations-test", version: "1.0.0" });
  await client.connect(clientSide);
  return client;
}

describe("the bridge's tools/list", () => {
  let withExtensions: RunningServer;
  let plain: RunningServer;
  beforeAll(async () => {
    withExtensions = await listen(createServer({ tools, logger: false }), { port: 0 });
    plain = await listen(createServer({ tools, logger: false, extensions: false }), { port: 0 });
  });
  afterAll(async () => {
    await withExtensions.close();
    await plain.close();
  });

  it("carries the annotations and the deprecation of a server that offers them", async () => {
    const client = await bridged(withExtensions.url);
    try {
      const { tools: listed } = await client.listTools();
      const send = listed.find((tool) => tool.name === "Sms_Send");
      expect(send).toMatchObject({
        title: "Send an SMS",
        description: "Deprecated: Use Sms.Send@2.0.0.\n\nSends a text message.",
        annotations: { title: "Send an SMS", destructiveHint: true, openWorldHint: true },
        _meta: { [DEPRECATION_META_KEY]: "Use Sms.Send@2.0.0." },
      });
      const now = listed.find((tool) => tool.name === "Clock_Now");
      expect(now).not.toHaveProperty("annotations");
      expect(now).not.toHaveProperty("title");
    } finally {
      await client.close();
    }
  });

  it("lists an OXP 1.0 server's tools without them", async () => {
    const client = await bridged(plain.url);
    try {
      const send = (await client.listTools()).tools.find((tool) => tool.name === "Sms_Send");
      expect(send?.description).toBe("Sends a text message.");
      expect(send).not.toHaveProperty("annotations");
      expect(send?._meta).toEqual({ [TOOL_ID_META_KEY]: "Sms.Send@1.0.0" });
    } finally {
      await client.close();
    }
  });
});
