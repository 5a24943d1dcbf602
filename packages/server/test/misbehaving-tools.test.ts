// The Express adapter with misbehaving tools: whatever a tool does, the call answers 200 and the server lives on.
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { defineTool, listen, type RunningServer, type Tool } from "../src/index.js";
import { makeServer } from "./harness.js";

const misbehaving = (name: string, run: Tool["run"], timeoutMs?: number): Tool => ({
  ...defineTool({
    toolkit: "Bad",
    name,
    version: "1.0.0",
    description: `A tool that ${name.toLowerCase()}.`,
    inputSchema: {},
    outputSchema: { type: "object", properties: { ok: { type: "boolean" } }, required: ["ok"] },
    run: () => ({ ok: true }),
  }),
  run,
  timeoutMs,
});

let running: RunningServer;
beforeAll(async () => {
  const tools = [
    misbehaving("Throws", () => {
      throw new Error("kaboom at /srv/app/secret.ts:12");
    }),
    misbehaving("Rejects", () => Promise.reject(new RangeError("bad range"))),
    misbehaving("Hangs", () => new Promise(() => {}), 100),
    misbehaving("ReturnsGarbage", () => ({ ok: "not a boolean" })),
    misbehaving("ReturnsBigInt", () => ({ ok: 1n })),
    misbehaving("ThrowsLater", () => {
      setTimeout(() => Promise.reject(new Error("late")).catch(() => {}), 5);
      return { ok: true };
    }),
  ];
  running = await listen(makeServer({ tools, logger: false, validateResponses: true }), { port: 0 });
});
afterAll(() => running.close());

const call = async (toolId: string) => {
  const response = await fetch(`${running.url}/tools/call`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ tool_id: toolId }),
  });
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
};

describe("misbehaving tools", () => {
  it.each([
    ["Bad.Throws", "The tool failed to run"],
    ["Bad.Rejects", "The tool failed to run"],
    ["Bad.Hangs", "The tool did not finish in time"],
    ["Bad.ReturnsGarbage", "The tool returned an invalid result"],
    ["Bad.ReturnsBigInt", "The tool returned an invalid result"],
  ])("%s answers 200 with success false: %s", async (toolId, message) => {
    const { status, body } = await call(toolId);
    expect(status).toBe(200);
    expect(body).toMatchObject({ success: false, error: { message } });
  });

  it("never puts a stack trace in the answer", async () => {
    const { body } = await call("Bad.Throws");
    expect(JSON.stringify(body)).not.toMatch(/\n\s+at /);
    expect((body.error as Record<string, unknown>).developer_message).toBe("Error: kaboom at /srv/app/secret.ts:12");
  });

  // rule: tool-failure.always-200
  it("keeps serving after all of them, concurrently", async () => {
    const ids = [
      "Bad.Throws",
      "Bad.Rejects",
      "Bad.Hangs",
      "Bad.ReturnsGarbage",
      "Bad.ReturnsBigInt",
      "Bad.ThrowsLater",
    ];
    const replies = await Promise.all(Array.from({ length: 60 }, (_, i) => call(ids[i % ids.length] as string)));
    expect(replies.every((reply) => reply.status === 200)).toBe(true);
    expect((await fetch(`${running.url}/health`)).status).toBe(200);
  });
});
