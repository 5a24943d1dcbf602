// Misbehaving tools, on the adapter under test: whatever a tool does, the call answers 200 and the server lives on.
import { until } from "@otc/test-helpers/until";
import { verifies } from "@otc/test-helpers/verifies";
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

/** How many times Bad.ThrowsLater's promise has rejected: after its answer went out, with nobody waiting for it. */
let lateRejections = 0;

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
    // Given up on at its 50 ms limit, its promise rejects 100 ms later: that rejection is the server's to handle.
    misbehaving(
      "ThrowsLater",
      () =>
        new Promise((_, reject) =>
          // real time: the tool's own late rejection, after its time limit; the test waits for it to happen.
          setTimeout(() => {
            lateRejections++;
            reject(new Error("late"));
          }, 150),
        ),
      50,
    ),
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
    ["Bad.ThrowsLater", "The tool did not finish in time"],
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

  it("handles the rejection of a run it gave up on: nothing unhandled, with or without a call_id", async () => {
    const unhandled: unknown[] = [];
    const record = (reason: unknown) => unhandled.push(reason);
    process.on("unhandledRejection", record);
    try {
      const before = lateRejections;
      const calls = [{ tool_id: "Bad.ThrowsLater" }, { tool_id: "Bad.ThrowsLater", call_id: "late-1" }];
      for (const body of calls) {
        const response = await fetch(`${running.url}/tools/call`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify(body),
        });
        expect(await response.json()).toMatchObject({ success: false, error: { can_retry: true } });
      }
      await until(() => lateRejections === before + 2, { what: "both late rejections" });
      // Past the rejections' own microtasks and the next turns of the event loop, where Node reports unhandled ones.
      for (let turn = 0; turn < 3; turn++) {
        await new Promise((resolve) => setImmediate(resolve));
      }
      expect(unhandled).toEqual([]);
    } finally {
      process.off("unhandledRejection", record);
    }
  });

  verifies("tool-failure.always-200", "keeps serving after all of them, concurrently", async () => {
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
