// docs/protocol.md section 1 against the running demo: GET /tools lists exactly the demo's catalog.
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
