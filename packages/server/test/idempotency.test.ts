// docs/protocol.md 3.6 and 3.7 over HTTP: call_id idempotency and time limits.
import { verifies } from "@otc/test-helpers/verifies";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { callTool, expectError, type Running, startServer } from "./harness.js";

let server: Running;
beforeAll(async () => {
  server = await startServer({ defaultTimeoutMs: 300, auth: { apiKeys: ["key-one", "key-two"] } });
});
afterAll(() => server.close());

const asOne = { "OXP-API-Key": "key-one" };
const increment = (callId: string, by = 1, userId?: string) => ({
  tool_id: "Counter.Increment",
  call_id: callId,
  input: { by },
  ...(userId ? { context: { user_id: userId } } : {}),
});

describe("call_id", () => {
  verifies("idempotency.replay", "replays a finished call without running the tool again", async () => {
    const before = server.counter.value;
    const first = await callTool(server.baseUrl, increment("replay-1", 5), asOne);
    const again = await callTool(server.baseUrl, increment("replay-1", 5), asOne);
    expect(first.body).toMatchObject({ success: true, value: { value: before + 5 } });
    expect(again.body).toEqual(first.body);
    expect(server.counter.value).toBe(before + 5);
  });

  verifies(
    "idempotency.concurrent-duplicate-waits",
    "runs a call exactly once when duplicates arrive while it runs",
    async () => {
      const before = server.counter.value;
      // Sleep holds the first call open; the duplicates must wait for it.
      const body = { tool_id: "System.Sleep", call_id: "sleepy-1", input: { ms: 150 } };
      const replies = await Promise.all(Array.from({ length: 8 }, () => callTool(server.baseUrl, body, asOne)));
      expect(new Set(replies.map((reply) => reply.text)).size).toBe(1);
      expect(replies[0]?.body).toMatchObject({ success: true, value: { slept_ms: 150 } });
      const counted = await Promise.all(
        Array.from({ length: 20 }, () => callTool(server.baseUrl, increment("burst-1", 2), asOne)),
      );
      expect(new Set(counted.map((reply) => reply.text)).size).toBe(1);
      expect(server.counter.value).toBe(before + 2);
      const ran = server.logs().filter((line) => line.call_id === "sleepy-1" && line.outcome === "success");
      expect(ran).toHaveLength(1);
    },
  );

  verifies.each([
    ["another input", increment("conflict-1", 2)],
    ["another tool", { tool_id: "Calculator.Add", call_id: "conflict-1", input: { a: 1, b: 1 } }],
    ["another user_id", increment("conflict-1", 1, "ann")],
  ])("idempotency.mismatch-400", "refuses the same call_id for %s with a 400", async (_case, body) => {
    await callTool(server.baseUrl, increment("conflict-1", 1), asOne);
    const reply = await callTool(server.baseUrl, body, asOne);
    expectError(reply, 400);
    expect(reply.body.message).toBe("This call_id was already used for a different call");
  });

  verifies(
    ["idempotency.per-principal", "auth.principal-identity"],
    "gives another authenticated principal's equal call_id a call of its own",
    async () => {
      const before = server.counter.value;
      const mine = await callTool(server.baseUrl, increment("principal-1"), asOne);
      const theirs = await callTool(server.baseUrl, increment("principal-1", 2), { "OXP-API-Key": "key-two" });
      expect(mine.body).toMatchObject({ success: true, value: { value: before + 1 } });
      expect(theirs.body).toMatchObject({ success: true, value: { value: before + 3 } });
    },
  );

  verifies("idempotency.replay", "treats versions that resolve to the same tool as the same call", async () => {
    const a = await callTool(
      server.baseUrl,
      { tool_id: "Greeting.Hello@2", call_id: "hello-1", input: { name: "A" } },
      asOne,
    );
    const b = await callTool(
      server.baseUrl,
      { tool_id: "Greeting.Hello", call_id: "hello-1", input: { name: "A" } },
      asOne,
    );
    expect(b.body).toEqual(a.body);
  });

  verifies(
    ["call.call-id-after-validation", "idempotency.what-is-stored"],
    "stores nothing for 400 and 422, so the corrected call runs",
    async () => {
      const before = server.counter.value;
      expectError(await callTool(server.baseUrl, increment("fixed-1", 0), asOne), 422);
      const fixed = await callTool(server.baseUrl, increment("fixed-1", 3), asOne);
      expect(fixed.body).toMatchObject({ success: true, value: { value: before + 3 } });
    },
  );

  verifies(
    "idempotency.what-is-stored",
    "does not store failures with can_retry: true, so the retry really runs again",
    async () => {
      const body = { tool_id: "Doorbell.Ring", call_id: "ring-1", input: { doorbell_id: "nope" } };
      await callTool(server.baseUrl, body, asOne);
      await callTool(server.baseUrl, body, asOne);
      const runs = server.logs().filter((line) => line.call_id === "ring-1" && line.msg === "tool call");
      expect(runs.map((line) => line.outcome)).toEqual(["tool_error", "tool_error"]);
    },
  );
});

describe("time limits (docs/protocol.md 3.6)", () => {
  verifies(
    ["tool-failure.timeout", "idempotency.what-is-stored"],
    "abandons a tool at its limit with success false and can_retry true, and the retry runs again",
    async () => {
      const body = { tool_id: "System.Sleep", call_id: "slow-1", input: { ms: 5_000 } };
      const started = Date.now();
      const reply = await callTool(server.baseUrl, body, asOne);
      const elapsed = Date.now() - started;
      expect(reply.status).toBe(200);
      expect(reply.body).toMatchObject({
        call_id: "slow-1",
        success: false,
        error: { message: "The tool did not finish in time", can_retry: true },
      });
      expect(elapsed).toBeGreaterThanOrEqual(290);
      expect(elapsed).toBeLessThan(3_000);
      await callTool(server.baseUrl, body, asOne);
      const runs = server.logs().filter((line) => line.call_id === "slow-1" && line.msg === "tool call");
      expect(runs.map((line) => line.outcome)).toEqual(["timeout", "timeout"]);
      expect((await callTool(server.baseUrl, increment("after-slow"), asOne)).status).toBe(200);
    },
  );

  it("lets a tool within its limit finish", async () => {
    const reply = await callTool(server.baseUrl, { tool_id: "System.Sleep", input: { ms: 20 } }, asOne);
    expect(reply.body).toMatchObject({ success: true, value: { slept_ms: 20 } });
  });
});
