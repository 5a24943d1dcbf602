// @otc/ai's shared half against the real demo: which tools are taken, under which names, and what each outcome says.
import { createClient, type OxpClient } from "@otc/client";
import { createDemoHandler } from "@otc/demo/handler";
import { createServer, defineTool, listen, type RunningServer } from "@otc/server";
import type { ToolAnnotations } from "@otc/types";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { oxpToolSpecs } from "../src/index.js";

let server: RunningServer;
let client: OxpClient;

beforeAll(async () => {
  const demo = createDemoHandler({ logger: false });
  server = await listen(demo.app, { port: 0 });
  client = createClient({ baseUrl: server.url });
});
afterAll(async () => {
  await server?.close();
});

const byName = async (options: Parameters<typeof oxpToolSpecs>[1] = {}) =>
  new Map((await oxpToolSpecs(client, options)).map((spec) => [spec.name, spec]));

describe("oxpToolSpecs", () => {
  it("takes every tool in its latest version, under its model name, with an object schema", async () => {
    const specs = await byName();
    expect(specs.get("Greeting_Hello")?.definition.id).toBe("Greeting.Hello@2.0.0");
    expect(specs.get("Calculator_Add")?.inputSchema).toMatchObject({ type: "object", required: ["a", "b"] });
    expect([...specs.values()].filter((spec) => spec.definition.id.startsWith("Greeting."))).toHaveLength(1);
  });

  it("asks approval for the tools the server annotates destructive, or as the option says", async () => {
    const specs = await byName();
    expect(specs.get("SMS_Send")?.needsApproval).toBe(true);
    expect(specs.get("Calculator_Add")?.needsApproval).toBe(false);
    const never = await byName({ approval: "never" });
    expect(never.get("SMS_Send")?.needsApproval).toBe(false);
    const picked = await byName({ approval: (tool) => tool.id.startsWith("Calculator.") });
    expect(picked.get("Calculator_Add")?.needsApproval).toBe(true);
    expect(picked.get("SMS_Send")?.needsApproval).toBe(false);
  });

  it("takes an absent hint as the protocol does: a tool not said to be safe asks approval", async () => {
    const noted = (name: string, annotations?: ToolAnnotations) =>
      defineTool({
        toolkit: "Notes",
        name,
        version: "1.0.0",
        description: `${name} a note.`,
        inputSchema: { type: "object", properties: {}, additionalProperties: false },
        outputSchema: { type: "string" },
        ...(annotations === undefined ? {} : { annotations }),
        run: () => "done",
      });
    const notes = await listen(
      createServer({
        tools: [
          noted("Read", { read_only: true }),
          noted("Append", { read_only: false, destructive: false }),
          noted("Rewrite", { read_only: false }),
          noted("Purge", { title: "Purge the notes" }),
          noted("Touch"),
        ],
        logger: false,
      }),
      { port: 0 },
    );
    try {
      const specs = await oxpToolSpecs(createClient({ baseUrl: notes.url }));
      expect(Object.fromEntries(specs.map((spec) => [spec.name, spec.needsApproval]))).toEqual({
        Notes_Read: false,
        Notes_Append: false,
        Notes_Rewrite: true,
        Notes_Purge: true,
        Notes_Touch: true,
      });
    } finally {
      await notes.close();
    }
  });

  it("selects by id and toolkit, pins versions, and names two versions of one tool apart", async () => {
    const specs = await byName({ tools: ["Calculator.Add", "Greeting.Hello@1.0.0"], toolkits: ["System"] });
    expect([...specs.keys()].sort()).toEqual([
      "Calculator_Add",
      "Greeting_Hello",
      "System_GetTimestamp",
      "System_Sleep",
    ]);
    expect(specs.get("Greeting_Hello")?.definition.version).toBe("1.0.0");

    const both = await byName({ tools: ["Greeting.Hello@1.0.0", "Greeting.Hello@2.0.0"] });
    expect([...both.keys()].sort()).toEqual(["Greeting_Hello_1_0_0", "Greeting_Hello_2_0_0"]);
  });

  it("refuses an id the server does not list, naming it", async () => {
    await expect(oxpToolSpecs(client, { tools: ["Calculator.Add", "Nope.Missing"] })).rejects.toThrow(
      /no tool "Nope\.Missing"/,
    );
    await expect(oxpToolSpecs(client, { tools: ["Calculator.Add@9.9.9"] })).rejects.toThrow(/Calculator\.Add@9\.9\.9/);
  });

  it("refuses a toolkit the server does not list, rather than leave the agent without its tools", async () => {
    await expect(oxpToolSpecs(client, { toolkits: ["Calculator", "Calender"] })).rejects.toThrow(
      'The server lists no toolkit "Calender"',
    );
    await expect(oxpToolSpecs(client, { tools: ["Nope.Missing"], toolkits: ["Calender"] })).rejects.toThrow(
      'The server lists no tool "Nope.Missing" and no toolkit "Calender"',
    );
  });

  it("tells the model a value, a tool's error, a wrong input and an authorization to ask for", async () => {
    const specs = await byName({ userId: "ai-core-test" });
    const add = await specs.get("Calculator_Add")?.call({ a: 2, b: 3 });
    expect(add).toMatchObject({ kind: "value", value: 5, text: "5" });

    const wrong = await specs.get("Calculator_Add")?.call({ a: "two", b: 3 });
    expect(wrong?.kind).toBe("invalid-input");
    expect(wrong?.text).toMatch(/Calculator_Add does not match its schema:\n- a: /);

    const ring = await specs.get("Doorbell_Ring")?.call({ doorbell_id: "no-such-doorbell" });
    expect(ring?.kind).toBe("tool-error");
    expect(ring?.text).toMatch(/^Error: Doorbell ID not found/);

    const gmail = await specs.get("Gmail_GetEmails")?.call({});
    expect(gmail?.kind).toBe("authorization");
    if (gmail?.kind === "authorization") {
      expect(gmail.challenges[0]?.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\//);
      expect(gmail.text).toContain(gmail.challenges[0]?.url);
    }
  });
});
