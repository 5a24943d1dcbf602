// docs/protocol.md sections 1 and 9.2 against the running demo: GET /tools lists exactly the demo's catalog, annotated when asked.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { expectSchema, type Running, send, startDemo } from "./harness.js";

let server: Running;
beforeAll(async () => {
  server = await startDemo();
});
afterAll(() => server.close());

describe("GET /tools", () => {
  it("lists exactly the demo catalog, every definition valid", async () => {
    const reply = await send(`${server.baseUrl}/tools`);
    expect(reply.status).toBe(200);
    expect(reply.headers.get("oxp-version")).toBe("1.0");
    expectSchema("ToolListResponse", reply.body);
    expect(reply.body.items.map((tool: { id: string }) => tool.id)).toEqual([
      "Calculator.Add@1.0.0",
      "Doorbell.Ring@0.1.0",
      "System.GetTimestamp@1.0.0",
      "Gmail.GetEmails@1.2.0",
      "SMS.Send@0.1.2",
      "Greeting.Hello@1.0.0",
      "Greeting.Hello@2.0.0",
      "Counter.Increment@1.0.0",
      "System.Sleep@1.0.0",
    ]);
  });
});

describe("GET /tools with OXP-Extensions: annotations", () => {
  // What each tool does to the world. A read-only tool leaves `destructive` out: it speaks of tools that change something.
  const readOnly = (title: string, openWorld = false) => ({
    title,
    read_only: true,
    idempotent: true,
    open_world: openWorld,
  });
  const expected: [string, Record<string, unknown>][] = [
    ["Calculator.Add@1.0.0", readOnly("Add two numbers")],
    [
      "Doorbell.Ring@0.1.0",
      { title: "Ring a doorbell", read_only: false, destructive: false, idempotent: false, open_world: true },
    ],
    ["System.GetTimestamp@1.0.0", readOnly("Get the current time")],
    ["Gmail.GetEmails@1.2.0", readOnly("Search Gmail", true)],
    [
      "SMS.Send@0.1.2",
      { title: "Send an SMS", read_only: false, destructive: true, idempotent: false, open_world: true },
    ],
    ["Greeting.Hello@1.0.0", readOnly("Say hello")],
    ["Greeting.Hello@2.0.0", readOnly("Say hello in English, French or Spanish")],
    [
      "Counter.Increment@1.0.0",
      { title: "Increment the counter", read_only: false, destructive: false, idempotent: false, open_world: false },
    ],
    ["System.Sleep@1.0.0", readOnly("Wait a while")],
  ];

  it("lists every tool with its title and hints, and the first greeting as deprecated", async () => {
    const reply = await send(`${server.baseUrl}/tools`, { headers: { "OXP-Extensions": "annotations" } });
    expect(reply.status).toBe(200);
    expect(reply.headers.get("oxp-extensions")).toBe("annotations");
    expectSchema("ToolListResponse", reply.body);
    const items = reply.body.items as { id: string; annotations?: unknown; deprecation_message?: string }[];
    expect(items.map((tool) => [tool.id, tool.annotations])).toEqual(expected);
    expect(items.filter((tool) => tool.deprecation_message).map((tool) => [tool.id, tool.deprecation_message])).toEqual(
      [["Greeting.Hello@1.0.0", "Use Greeting.Hello@2.0.0: it returns an object and speaks French and Spanish too."]],
    );
  });
});

describe("search on the demo", () => {
  it("ranks the tool a user's words describe first, and lists the toolkits with their descriptions", async () => {
    const asked = { headers: { "OXP-Extensions": "search" } };
    const found = await send(`${server.baseUrl}/tools?q=${encodeURIComponent("add two numbers")}&view=summary`, asked);
    expect(found.status).toBe(200);
    expectSchema("ToolSearchResponse", found.body);
    expect(found.body.items[0].id).toBe("Calculator.Add@1.0.0");
    const greeting = await send(`${server.baseUrl}/tools?q=${encodeURIComponent("say hello in french")}`, asked);
    expect(greeting.body.items[0].id).toBe("Greeting.Hello@2.0.0");
    const toolkits = await send(`${server.baseUrl}/toolkits`, asked);
    expectSchema("ToolkitListResponse", toolkits.body);
    expect(toolkits.body.items.map((toolkit: { name: string }) => toolkit.name)).toEqual([
      "Calculator",
      "Counter",
      "Doorbell",
      "Gmail",
      "Greeting",
      "SMS",
      "System",
    ]);
    expect(toolkits.body.items.every((toolkit: { description?: string }) => toolkit.description)).toBe(true);
    expect(toolkits.body.items.find((toolkit: { name: string }) => toolkit.name === "Greeting").tool_count).toBe(1);
  });
});
