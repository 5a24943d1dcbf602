// The tasks extension (docs/protocol.md 9.3) on the demo: System.Sleep run asynchronously reports increasing progress, and a cancel stops it at once.
import { verifies } from "@otc/test-helpers/verifies";
import { afterAll, beforeAll, describe, expect, onTestFinished, vi } from "vitest";
import { SLEEP_PROGRESS_INTERVAL_MS } from "../src/tools.js";
import { callTool, expectSchema, type Running, send, startDemo } from "./harness.js";

const TASKS = { "OXP-Extensions": "tasks" };

let server: Running;
beforeAll(async () => {
  server = await startDemo();
});
afterAll(() => server.close());

/** Starts System.Sleep for `ms` asynchronously; answers its call_id after checking the 202. */
async function startSleep(ms: number): Promise<string> {
  const accepted = await callTool(
    server.baseUrl,
    { tool_id: "System.Sleep@1.0.0", input: { ms } },
    { ...TASKS, Prefer: "respond-async" },
  );
  expect(accepted.status, accepted.text).toBe(202);
  expectSchema("CallStatus", accepted.body);
  expect(accepted.headers.get("location")).toBe(`${server.baseUrl}/tools/calls/${accepted.body.call_id}`);
  return accepted.body.call_id;
}

const statusUrl = (callId: string) => `${server.baseUrl}/tools/calls/${encodeURIComponent(callId)}`;

describe("System.Sleep as a task", () => {
  verifies(
    "tasks.progress",
    "reports the milliseconds slept of its total, increasing, until it completes",
    async () => {
      const callId = await startSleep(3_000);
      const seen: number[] = [];
      for (;;) {
        // A long poll answers on the next change: each answer is newer than the one before.
        const reply = await send(statusUrl(callId), { headers: { ...TASKS, Prefer: "wait=5" } });
        expect(reply.status, reply.text).toBe(200);
        expectSchema("CallStatus", reply.body);
        if (reply.body.status !== "running") {
          expect(reply.body).toMatchObject({
            status: "completed",
            result: { success: true, value: { slept_ms: 3_000 } },
          });
          break;
        }
        const { progress } = reply.body;
        expect(progress).toMatchObject({ total: 3_000, message: expect.stringMatching(/^Slept \d+ of 3000 ms$/) });
        expect(progress.progress).toBeGreaterThan(seen.at(-1) ?? 0);
        expect(progress.progress).toBeLessThanOrEqual(3_000);
        seen.push(progress.progress);
      }
      // Reported every 100 ms, kept a few times a second: several steps over 3 s, however busy the machine.
      expect(seen.length).toBeGreaterThanOrEqual(2);
    },
  );

  verifies("tasks.cancel", "stops at once on a DELETE, its result cancelled and not retryable", async () => {
    // System.Sleep's progress ticker runs on vitest's clock, which the test moves: no tick happens unless it says so.
    vi.useFakeTimers({ toFake: ["setInterval", "clearInterval"] });
    onTestFinished(() => {
      vi.useRealTimers();
    });
    const callId = await startSleep(30_000);
    expect(vi.getTimerCount()).toBe(1);
    vi.advanceTimersByTime(SLEEP_PROGRESS_INTERVAL_MS);
    // Running, with progress, before the cancel.
    const running = await send(statusUrl(callId), { headers: TASKS });
    expect(running.body).toMatchObject({ status: "running", progress: { total: 30_000 } });
    const asked = Date.now();
    const cancelled = await send(statusUrl(callId), { method: "DELETE", headers: TASKS });
    // Answered once the run ended, far sooner than the 30 s sleep (half of it bounds a busy machine's slowness).
    expect(Date.now() - asked).toBeLessThan(15_000);
    expect(cancelled.status, cancelled.text).toBe(200);
    expectSchema("CallStatus", cancelled.body);
    expect(cancelled.body).toMatchObject({
      call_id: callId,
      status: "cancelled",
      result: { success: false, error: { message: "The call was cancelled", can_retry: false } },
    });
    expect(cancelled.body.result.duration).toBeLessThan(5_000);
    // Its event stream is the cancelled result alone, at once; the status stays as the cancel left it.
    const events = await send(`${statusUrl(callId)}/events`, { headers: TASKS });
    expect(events.text).toMatch(/^retry: \d+\n\nid: result\nevent: result\ndata: \{.*"can_retry":false.*\}\n\n$/);
    // Its ticker stopped with the cancel: nothing is left to tick, however far the clock moves.
    expect(vi.getTimerCount()).toBe(0);
    vi.advanceTimersByTime(3 * SLEEP_PROGRESS_INTERVAL_MS);
    const after = await send(statusUrl(callId), { headers: TASKS });
    expect(after.body).toMatchObject({ status: "cancelled", result: cancelled.body.result });
    expect(after.body.progress?.progress ?? 0).toBeLessThanOrEqual(cancelled.body.progress?.progress ?? 0);
  });
});
