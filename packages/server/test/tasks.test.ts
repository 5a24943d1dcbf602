// docs/protocol.md 9.3 over HTTP: asynchronous calls, their status, long poll, events and cancel, on every adapter.
import { ManualClock } from "@otc/test-helpers/manual-clock";
import { until } from "@otc/test-helpers/until";
import { verifies } from "@otc/test-helpers/verifies";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  defineTool,
  type IdempotencyKey,
  type IdempotencyStore,
  listen,
  MemoryIdempotencyStore,
  OxpToolError,
  type Tool,
} from "../src/index.js";
import { callTool, expectError, expectSchema, makeServer, type Running, send, startServer } from "./harness.js";

const KEY_ONE = "task-key-one-0123456789abcdef";
const KEY_TWO = "task-key-two-0123456789abcdef";
const TASKS = { "OXP-Extensions": "tasks" };
const one = { ...TASKS, "OXP-API-Key": KEY_ONE };
const two = { ...TASKS, "OXP-API-Key": KEY_TWO };
const ASYNC = { ...one, Prefer: "respond-async" };

let server: Running;
beforeAll(async () => {
  server = await startServer({
    auth: { apiKeys: [KEY_ONE, KEY_TWO] },
    eventStreams: { maxPerClient: 2, keepAliveMs: 100 },
  });
});
afterAll(() => server.close());

/** Starts System.Sleep asynchronously; answers the 202. */
async function startSleep(ms: number, extra: Record<string, unknown> = {}, headers: Record<string, string> = ASYNC) {
  const reply = await callTool(server.baseUrl, { tool_id: "System.Sleep", input: { ms }, ...extra }, headers);
  expect(reply.status).toBe(202);
  return reply;
}

const statusOf = (callId: string, headers: Record<string, string> = one) =>
  send(`${server.baseUrl}/tools/calls/${encodeURIComponent(callId)}`, { headers });

/** The events of a stream as [id, event, data] (comments and the retry line dropped), and the raw text. */
function parseEvents(text: string): { id?: string; event?: string; data?: unknown }[] {
  return text
    .split("\n\n")
    .filter((block) => block.includes("event:"))
    .map((block) => {
      const fields = Object.fromEntries(
        block.split("\n").map((line) => [line.slice(0, line.indexOf(":")), line.slice(line.indexOf(":") + 2)]),
      );
      return { id: fields.id, event: fields.event, data: JSON.parse(fields.data ?? "null") };
    });
}

/** Reads a stream until `until` says stop (or it ends); cancels the rest. */
async function readStream(response: Response, until: (text: string) => boolean = () => false): Promise<string> {
  const reader = (response.body as ReadableStream<Uint8Array>).getReader();
  const decoder = new TextDecoder();
  let text = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) {
      return text;
    }
    text += decoder.decode(value, { stream: true });
    if (until(text)) {
      await reader.cancel();
      return text;
    }
  }
}

describe("POST /tools/call with Prefer: respond-async", () => {
  verifies("tasks.respond-async", "answers 202 with the status, Location and the applied preference", async () => {
    const reply = await startSleep(2_000);
    expectSchema("CallStatus", reply.body);
    expect(reply.body).toMatchObject({ status: "running" });
    expect(reply.body.call_id).toMatch(/^[0-9a-f-]{36}$/);
    expect(reply.body).not.toHaveProperty("result");
    expect(reply.headers.get("location")).toBe(`${server.baseUrl}/tools/calls/${reply.body.call_id}`);
    expect(reply.headers.get("preference-applied")).toBe("respond-async");
    expect(reply.headers.get("oxp-extensions")).toBe("tasks");
    expect(reply.headers.get("oxp-version")).toBe("1.0");
    await send(`${reply.headers.get("location")}`, { method: "DELETE", headers: one });
  });

  verifies("tasks.respond-async", "builds Location from the public URL when one is set", async () => {
    const behind = await startServer({ publicUrl: "https://tools.example.com/oxp/" });
    try {
      const reply = await callTool(
        behind.baseUrl,
        { tool_id: "System.Sleep", input: { ms: 500 }, call_id: "behind a proxy" },
        { ...TASKS, Prefer: "respond-async" },
      );
      expect(reply.status).toBe(202);
      expect(reply.headers.get("location")).toBe("https://tools.example.com/oxp/tools/calls/behind%20a%20proxy");
    } finally {
      await behind.close();
    }
  });

  verifies("tasks.respond-async", "answers 200 when the call ends within wait=N, in the envelope too", async () => {
    const quick = await callTool(
      server.baseUrl,
      { tool_id: "System.Sleep", input: { ms: 50 } },
      { ...ASYNC, Prefer: "respond-async, wait=5" },
    );
    expect(quick.status).toBe(200);
    expectSchema("CallToolResponse", quick.body);
    expect(quick.body.value).toEqual({ slept_ms: 50 });
    const add = await callTool(
      server.baseUrl,
      { $schema: "urn:oxp:1.0", request: { tool_id: "Calculator.Add", input: { a: 1, b: 2 } } },
      ASYNC,
    );
    expect(add.status).toBe(200);
    expect(add.body).toMatchObject({ $schema: "urn:oxp:1.0", result: { success: true, value: 3 } });
  });

  verifies(
    "tasks.respond-async",
    "answers its checks as OXP 1.0 does: never 202 for a call that fails them",
    async () => {
      expectError(await callTool(server.baseUrl, { tool_id: "System.Sleep", input: { ms: "x" } }, ASYNC), 422);
      expectError(await callTool(server.baseUrl, { tool_id: "Nope.Nope" }, ASYNC), 400);
      expectError(await callTool(server.baseUrl, { tool_id: "System.Sleep", input: { ms: 1 }, extra: 1 }, ASYNC), 400);
      const { "OXP-API-Key": _key, ...anonymous } = ASYNC;
      expectError(await callTool(server.baseUrl, { tool_id: "System.Sleep", input: { ms: 1 } }, anonymous), 401);
      const wrongType = await send(`${server.baseUrl}/tools/call`, {
        method: "POST",
        headers: { ...ASYNC, "content-type": "text/plain" },
        body: "{}",
      });
      expectError(wrongType, 415);
    },
  );

  verifies("extensions.off-without-header", "ignores Prefer: respond-async without the tasks extension", async () => {
    const reply = await callTool(
      server.baseUrl,
      { tool_id: "System.Sleep", input: { ms: 150 } },
      { "OXP-API-Key": KEY_ONE, Prefer: "respond-async" },
    );
    expect(reply.status).toBe(200);
    expect(reply.body.value).toEqual({ slept_ms: 150 });
    expect(reply.headers.get("preference-applied")).toBeNull();
  });
});

describe("GET /tools/calls/{call_id}", () => {
  verifies("tasks.status", "reads running with progress, then completed with the result", async () => {
    const { body } = await startSleep(2_000);
    // Read once it has progress: a fixed 150 ms into a 400 ms sleep was outlasted once on a busy CI machine.
    let running = await statusOf(body.call_id);
    await until(async () => {
      running = await statusOf(body.call_id);
      return running.body.status !== "running" || running.body.progress?.progress > 0;
    });
    expect(running.status).toBe(200);
    expectSchema("CallStatus", running.body);
    expect(running.headers.get("oxp-extensions")).toBe("tasks");
    expect(running.body).toMatchObject({ call_id: body.call_id, status: "running", progress: { total: 2_000 } });
    expect(running.body.progress.progress).toBeGreaterThan(0);
    expect(running.body).not.toHaveProperty("result");
    await until(async () => (await statusOf(body.call_id)).body.status !== "running");
    const done = await statusOf(body.call_id);
    expectSchema("CallStatus", done.body);
    expect(done.body).toMatchObject({ status: "completed", result: { success: true, value: { slept_ms: 2_000 } } });
  });

  verifies("tasks.status", "answers 404 to another principal, for an unknown id, and without the header", async () => {
    const { body } = await startSleep(300, { call_id: "mine-only" });
    const theirs = await statusOf("mine-only", two);
    expectError(theirs, 404);
    const unknown = await statusOf("never-was");
    expectError(unknown, 404);
    expect(theirs.body).toEqual(unknown.body);
    expect((await statusOf(body.call_id, { "OXP-API-Key": KEY_ONE })).status).toBe(404);
    // The other principal's cancel reaches nothing either.
    expectError(await send(`${server.baseUrl}/tools/calls/mine-only`, { method: "DELETE", headers: two }), 404);
    expect((await statusOf("mine-only")).body.status).toBe("running");
  });

  verifies("tasks.long-poll", "holds the answer until the progress changes", async () => {
    const { body } = await startSleep(1_000);
    const first = await statusOf(body.call_id);
    const started = Date.now();
    const next = await statusOf(body.call_id, { ...one, Prefer: "wait=20" });
    // Answered on the progress, not at the end of the wait: half of it bounds a busy machine's slowness.
    expect(Date.now() - started).toBeLessThan(10_000);
    expect(next.body.progress.progress).toBeGreaterThan(first.body.progress?.progress ?? -1);
    await send(`${server.baseUrl}/tools/calls/${body.call_id}`, { method: "DELETE", headers: one });
  });

  verifies("tasks.long-poll", "answers after N seconds when nothing changes", async () => {
    const quiet = defineTool({
      toolkit: "Quiet",
      name: "Wait",
      version: "1.0.0",
      description: "Waits without a word.",
      inputSchema: {},
      outputSchema: null,
      run: (_input, { signal }) =>
        new Promise<null>((resolve) => signal.addEventListener("abort", () => resolve(null), { once: true })),
    });
    const alone = await listen(makeServer({ tools: [quiet], logger: false }), { port: 0 });
    try {
      const accepted = await callTool(alone.url, { tool_id: "Quiet.Wait" }, { ...TASKS, Prefer: "respond-async" });
      const started = Date.now();
      const reply = await send(`${alone.url}/tools/calls/${accepted.body.call_id}`, {
        headers: { ...TASKS, Prefer: "wait=1" },
      });
      expect(Date.now() - started).toBeGreaterThanOrEqual(900);
      expect(reply.body.status).toBe("running");
      // Past the bound, 30 seconds at most: wait=1000 is not a thousand seconds (cancelled here after a moment).
      await send(`${alone.url}/tools/calls/${accepted.body.call_id}`, { method: "DELETE", headers: TASKS });
    } finally {
      await alone.close();
    }
  });
});

describe("GET /tools/calls/{call_id}/events", () => {
  verifies("tasks.events", "streams increasing progress, then the result, then ends", async () => {
    // Long enough that the stream opens while it runs, also on a busy machine (the result alone would have no progress).
    const { body } = await startSleep(1_500);
    const response = await fetch(`${server.baseUrl}/tools/calls/${body.call_id}/events`, { headers: one });
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toMatch(/^text\/event-stream/);
    expect(response.headers.get("oxp-version")).toBe("1.0");
    const events = parseEvents(await readStream(response));
    const progress = events.filter((event) => event.event === "progress");
    expect(progress.length).toBeGreaterThanOrEqual(1);
    const numbers = progress.map((event) => Number(event.id));
    expect(numbers).toEqual([...numbers].sort((a, b) => a - b));
    for (const event of progress) {
      expectSchema("CallProgress", event.data);
    }
    expect(events.at(-1)).toEqual({ id: "result", event: "result", data: expect.objectContaining({ success: true }) });
    expect(events.filter((event) => event.event === "result")).toHaveLength(1);
  });

  verifies("tasks.events", "resumes after Last-Event-ID, and sends nothing after the result", async () => {
    const { body } = await startSleep(1_500);
    const url = `${server.baseUrl}/tools/calls/${body.call_id}/events`;
    const first = parseEvents(
      await readStream(await fetch(url, { headers: one }), (text) => text.includes("event: progress")),
    );
    const seen = Number(first[0]?.id);
    const resumed = parseEvents(
      await readStream(await fetch(url, { headers: { ...one, "Last-Event-ID": String(seen) } })),
    );
    const progress = resumed.filter((event) => event.event === "progress");
    expect(progress.every((event) => Number(event.id) > seen)).toBe(true);
    expect(resumed.at(-1)?.event).toBe("result");
    // Ended: the stream of a finished call is its result; after it, nothing.
    expect(parseEvents(await readStream(await fetch(url, { headers: one })))).toEqual([
      expect.objectContaining({ event: "result", id: "result" }),
    ]);
    expect(parseEvents(await readStream(await fetch(url, { headers: { ...one, "Last-Event-ID": "result" } })))).toEqual(
      [],
    );
  });

  verifies("tasks.events-bounded", "keeps an idle stream alive and bounds a client's open streams", async () => {
    const { body } = await startSleep(3_000);
    const url = `${server.baseUrl}/tools/calls/${body.call_id}/events`;
    const keepAlive = await readStream(await fetch(url, { headers: one }), (text) => text.includes(": keep-alive"));
    expect(keepAlive).toContain(": keep-alive\n\n");
    const held = [new AbortController(), new AbortController()];
    const streams = await Promise.all(
      held.map((controller) => fetch(url, { headers: one, signal: controller.signal })),
    );
    expect(streams.map((stream) => stream.status)).toEqual([200, 200]);
    const third = await send(url, { headers: one });
    expectError(third, 429);
    expect(third.headers.get("retry-after")).toMatch(/^\d+$/);
    // Another principal has its own allowance.
    const theirs = await send(`${server.baseUrl}/tools/calls/${body.call_id}/events`, { headers: two });
    expect(theirs.status).toBe(404);
    // A client that hangs up frees its stream's place.
    held[0]?.abort();
    await until(async () => {
      const controller = new AbortController();
      const reply = await fetch(url, { headers: one, signal: controller.signal });
      controller.abort();
      return reply.status === 200;
    });
    held[1]?.abort();
    await send(`${server.baseUrl}/tools/calls/${body.call_id}`, { method: "DELETE", headers: one });
  });
});

describe("DELETE /tools/calls/{call_id}", () => {
  verifies("tasks.cancel", "fires the tool's AbortSignal and ends the call cancelled, once", async () => {
    const { body } = await startSleep(5_000, { call_id: "to-cancel" });
    const cancelled = await send(`${server.baseUrl}/tools/calls/to-cancel`, { method: "DELETE", headers: one });
    expect(cancelled.status).toBe(200);
    expectSchema("CallStatus", cancelled.body);
    expect(cancelled.body).toMatchObject({
      call_id: body.call_id,
      status: "cancelled",
      result: { success: false, error: { message: "The call was cancelled", can_retry: false } },
    });
    await until(async () => server.logs().some((line) => line.msg === "sleep aborted" && line.call_id === "to-cancel"));
    expect(server.logs().find((line) => line.msg === "sleep aborted" && line.call_id === "to-cancel")?.reason).toBe(
      "CallCancelled",
    );
    const again = await send(`${server.baseUrl}/tools/calls/to-cancel`, { method: "DELETE", headers: one });
    expect(again.body).toEqual(cancelled.body);
    expect((await statusOf("to-cancel")).body).toEqual(cancelled.body);
    expectError(await send(`${server.baseUrl}/tools/calls/nope`, { method: "DELETE", headers: one }), 404);
  });

  verifies("tasks.cancel", "leaves an ended call as it is", async () => {
    const done = await callTool(
      server.baseUrl,
      { tool_id: "Calculator.Add", input: { a: 2, b: 2 }, call_id: "ended" },
      { "OXP-API-Key": KEY_ONE },
    );
    const reply = await send(`${server.baseUrl}/tools/calls/ended`, { method: "DELETE", headers: one });
    expect(reply.status).toBe(200);
    expect(reply.body).toEqual({ call_id: "ended", status: "completed", result: done.body });
  });
});

describe("a task is its call_id record", () => {
  verifies(
    "tasks.one-record",
    "lets a repeated POST join the run, asynchronous or not, and replays a cancel",
    async () => {
      await startSleep(400, { call_id: "joined" });
      const again = await startSleep(400, { call_id: "joined" });
      expect(again.body.call_id).toBe("joined");
      const sync = await callTool(
        server.baseUrl,
        { tool_id: "System.Sleep", input: { ms: 400 }, call_id: "joined" },
        one,
      );
      expect(sync.status).toBe(200);
      expect(sync.body.value).toEqual({ slept_ms: 400 });
      expect((await statusOf("joined")).body.result).toEqual(sync.body);
      const runs = server.logs().filter((line) => line.call_id === "joined" && line.outcome === "success");
      expect(runs).toHaveLength(1);
      expectError(
        await callTool(server.baseUrl, { tool_id: "System.Sleep", input: { ms: 1 }, call_id: "joined" }, ASYNC),
        400,
      );
      await startSleep(5_000, { call_id: "cancel-kept" });
      await send(`${server.baseUrl}/tools/calls/cancel-kept`, { method: "DELETE", headers: one });
      const replay = await callTool(
        server.baseUrl,
        { tool_id: "System.Sleep", input: { ms: 5_000 }, call_id: "cancel-kept" },
        ASYNC,
      );
      expect(replay.status).toBe(200);
      expect(replay.body.error.message).toBe("The call was cancelled");
    },
  );

  verifies(
    "tasks.one-record",
    "keeps a retryable failure for its status, and runs the call again on a new POST",
    async () => {
      let runs = 0;
      // The first run goes on until the test has its 202, then fails.
      let accept: () => void = () => {};
      const accepted202 = new Promise<void>((resolve) => {
        accept = resolve;
      });
      const flaky = defineTool({
        toolkit: "Flaky",
        name: "Once",
        version: "1.0.0",
        description: "Fails, retryably, on its first run.",
        inputSchema: {},
        outputSchema: {},
        run: async () => {
          runs++;
          if (runs === 1) {
            await accepted202;
            throw new OxpToolError("Not yet", { canRetry: true });
          }
          return runs;
        },
      });
      const alone = await listen(makeServer({ tools: [flaky], logger: false }), { port: 0 });
      try {
        const headers = { ...TASKS, Prefer: "respond-async" };
        const accepted = await callTool(alone.url, { tool_id: "Flaky.Once", call_id: "f" }, headers);
        expect(accepted.status).toBe(202);
        accept();
        const status = async () => (await send(`${alone.url}/tools/calls/f`, { headers: TASKS })).body;
        await until(async () => (await status()).status !== "running");
        expect(await status()).toMatchObject({
          status: "completed",
          result: { success: false, error: { can_retry: true } },
        });
        const retried = await callTool(
          alone.url,
          { tool_id: "Flaky.Once", call_id: "f" },
          { ...TASKS, Prefer: "respond-async, wait=5" },
        );
        expect(retried.body).toMatchObject({ success: true, value: 2 });
        expect(runs).toBe(2);
      } finally {
        await alone.close();
      }
    },
  );
});

describe("progress", () => {
  verifies("tasks.progress", "is kept a few times a second, only increasing", async () => {
    // The server's clock, which the tool moves 100 ms on after every 100 steps: 0.6 s of reports, in any real time.
    const clock = new ManualClock();
    let followed: () => void = () => {};
    const streamOpen = new Promise<void>((resolve) => {
      followed = resolve;
    });
    const chatty = defineTool({
      toolkit: "Chatty",
      name: "Count",
      version: "1.0.0",
      description: "Reports progress as fast as it can, and some nonsense.",
      inputSchema: {},
      outputSchema: null,
      run: async (_input, context) => {
        // Reports once the test follows the call's event stream.
        await streamOpen;
        for (let step = 1; step <= 600; step++) {
          context.progress({ progress: step, total: 600, message: "x".repeat(5_000) });
          context.progress({ progress: step - 1 });
          context.progress({ progress: Number.NaN } as never);
          context.progress("half" as never);
          if (step % 100 === 0) {
            await clock.advance(100);
          }
        }
      },
    });
    const alone = await listen(makeServer({ tools: [chatty], logger: false, progressPerSecond: 5, clock }), {
      port: 0,
    });
    try {
      const accepted = await callTool(alone.url, { tool_id: "Chatty.Count" }, { ...TASKS, Prefer: "respond-async" });
      const stream = await fetch(`${alone.url}/tools/calls/${accepted.body.call_id}/events`, { headers: TASKS });
      followed();
      const events = parseEvents(await readStream(stream));
      const progress = events.filter((event) => event.event === "progress").map((event) => event.data as never);
      // 0.6 s of reports at 5 a second: the first at once, then the latest of each 200 ms, not 2,400.
      expect(progress.length).toBeGreaterThanOrEqual(1);
      expect(progress.length).toBeLessThanOrEqual(4);
      const values = progress.map((entry: { progress: number }) => entry.progress);
      expect(values).toEqual([...new Set(values)].sort((a, b) => a - b));
      // Kept: the first, then the latest of each interval ([1, 200, 400, 600]); a stream read late may skip some.
      expect(values.every((value) => [1, 200, 400, 600].includes(value))).toBe(true);
      for (const entry of progress as { message: string }[]) {
        expect(entry.message.length).toBeLessThanOrEqual(1_000);
      }
    } finally {
      await alone.close();
    }
  });
});

describe("bounds", () => {
  verifies("tasks.bounded", "bounds a client's asynchronous calls apart from its other calls", async () => {
    const bounded = await startServer({ maxAsyncCallsPerClient: 2, maxRunningCallsPerClient: 1 });
    try {
      const headers = { ...TASKS, Prefer: "respond-async" };
      const start = () => callTool(bounded.baseUrl, { tool_id: "System.Sleep", input: { ms: 2_000 } }, headers);
      const accepted = [await start(), await start()];
      expect(accepted.map((reply) => reply.status)).toEqual([202, 202]);
      const refused = await start();
      expectError(refused, 429);
      expect(refused.headers.get("retry-after")).toMatch(/^\d+$/);
      // Calls answered in their request have their own bound, untouched.
      expect((await callTool(bounded.baseUrl, { tool_id: "System.Sleep", input: { ms: 10 } })).status).toBe(200);
      for (const reply of accepted) {
        await send(`${bounded.baseUrl}/tools/calls/${reply.body.call_id}`, { method: "DELETE", headers: TASKS });
      }
      expect((await start()).status).toBe(202);
    } finally {
      await bounded.close();
    }
  });

  verifies("tasks.bounded", "bounds all asynchronous calls together", async () => {
    const bounded = await startServer({ maxAsyncCalls: 1, auth: { apiKeys: [KEY_ONE, KEY_TWO] } });
    try {
      const call = (key: string) =>
        callTool(
          bounded.baseUrl,
          { tool_id: "System.Sleep", input: { ms: 1_000 } },
          { ...TASKS, Prefer: "respond-async", "OXP-API-Key": key },
        );
      expect((await call(KEY_ONE)).status).toBe(202);
      const refused = await call(KEY_TWO);
      expectError(refused, 503);
      expect(refused.headers.get("retry-after")).toMatch(/^\d+$/);
    } finally {
      await bounded.close();
    }
  });

  verifies("tasks.bounded", "gives asynchronous calls their own, longer time limit", async () => {
    const limited = await startServer({ defaultTimeoutMs: 100, asyncTimeoutMs: 400 });
    try {
      const headers = { ...TASKS, Prefer: "respond-async, wait=5" };
      const longer = await callTool(limited.baseUrl, { tool_id: "System.Sleep", input: { ms: 250 } }, headers);
      expect(longer.body).toMatchObject({ success: true, value: { slept_ms: 250 } });
      const sync = await callTool(limited.baseUrl, { tool_id: "System.Sleep", input: { ms: 250 } });
      expect(sync.body).toMatchObject({ success: false, error: { can_retry: true } });
      const tooLong = await callTool(limited.baseUrl, { tool_id: "System.Sleep", input: { ms: 2_000 } }, headers);
      expect(tooLong.body).toMatchObject({
        success: false,
        error: { message: "The tool did not finish in time", can_retry: true },
      });
    } finally {
      await limited.close();
    }
  });
});

it("types a tool's progress report", () => {
  const typed: Tool = defineTool({
    toolkit: "Typed",
    name: "Progress",
    version: "1.0.0",
    description: "Reports progress.",
    inputSchema: {},
    outputSchema: null,
    run: (_input, context) => {
      context.progress({ progress: 1, total: 2, message: "half" });
    },
  });
  expect(typed.name).toBe("Progress");
});

describe("a store shared by several instances", () => {
  verifies(
    "tasks.shared-store",
    "lets a call run on A be read on B, streamed from C and cancelled through B",
    async () => {
      const store = new MemoryIdempotencyStore();
      const [a, b, c] = await Promise.all([
        startServer({ idempotencyStore: store }),
        startServer({ idempotencyStore: store }),
        startServer({ idempotencyStore: store }),
      ]);
      try {
        const headers = { ...TASKS, Prefer: "respond-async" };
        const accepted = await callTool(
          a.baseUrl,
          { tool_id: "System.Sleep", input: { ms: 5_000 }, call_id: "shared" },
          headers,
        );
        expect(accepted.status).toBe(202);
        await until(
          async () => (await send(`${b.baseUrl}/tools/calls/shared`, { headers: TASKS })).body.progress !== undefined,
        );
        const onB = await send(`${b.baseUrl}/tools/calls/shared`, { headers: { ...TASKS, Prefer: "wait=5" } });
        expect(onB.body).toMatchObject({ status: "running", progress: { total: 5_000 } });
        const stream = await fetch(`${c.baseUrl}/tools/calls/shared/events`, { headers: TASKS });
        let streamed = "";
        const reading = readStream(stream, (text) => {
          streamed = text;
          return false;
        });
        await until(() => streamed.includes("event: progress"), { what: "a progress event on C's stream" });
        const cancelled = await send(`${b.baseUrl}/tools/calls/shared`, { method: "DELETE", headers: TASKS });
        expect(cancelled.body).toMatchObject({ status: "cancelled", result: { error: { can_retry: false } } });
        await until(async () => a.logs().some((line) => line.msg === "sleep aborted" && line.call_id === "shared"));
        const events = parseEvents(await reading);
        expect(events.filter((event) => event.event === "progress").length).toBeGreaterThanOrEqual(1);
        expect(events.at(-1)).toMatchObject({
          event: "result",
          data: { error: { message: "The call was cancelled" } },
        });
        expect((await send(`${c.baseUrl}/tools/calls/shared`, { headers: TASKS })).body.status).toBe("cancelled");
      } finally {
        await Promise.all([a.close(), b.close(), c.close()]);
      }
    },
  );

  verifies(
    "tasks.shared-store",
    "never answers a progress that goes back, read in turn through the running instance and two others",
    async () => {
      const store = new MemoryIdempotencyStore();
      // A store over a network: a progress reaches it 15 ms after it is sent, and its answer comes 15 ms later.
      // real time: the store's delay races real reads through three instances, and that race is what is tested.
      const later = () => new Promise((resolve) => setTimeout(resolve, 15));
      const remote: IdempotencyStore = Object.assign(Object.create(store) as MemoryIdempotencyStore, {
        progress: async (...args: Parameters<MemoryIdempotencyStore["progress"]>) => {
          await later();
          const kept = await store.progress(...args);
          await later();
          return kept;
        },
      });
      const start = () => startServer({ idempotencyStore: remote, progressPerSecond: 20 });
      const [a, b, c] = await Promise.all([start(), start(), start()]);
      try {
        const headers = { ...TASKS, Prefer: "respond-async" };
        const request = { tool_id: "System.Sleep", input: { ms: 3_000 }, call_id: "in-turn" };
        expect((await callTool(a.baseUrl, request, headers)).status).toBe(202);
        // A client following the call through whichever instance answers: A (which runs it), B, C, A, B...
        const seen: number[] = [];
        const started = Date.now();
        for (let read = 0; Date.now() - started < 1_500; read++) {
          const instance = [a, b, c][read % 3] as Running;
          const status = await send(`${instance.baseUrl}/tools/calls/in-turn`, { headers: TASKS });
          expect(status.body.status).toBe("running");
          seen.push(status.body.progress?.progress ?? 0);
        }
        // Many reads, through a run that moved on all along.
        expect(seen.length).toBeGreaterThan(20);
        expect(new Set(seen).size).toBeGreaterThan(5);
        // Never less than an answer before it, whichever instances the two came from.
        expect(seen.filter((value, index) => value < (seen[index - 1] ?? 0))).toEqual([]);
        await send(`${b.baseUrl}/tools/calls/in-turn`, { method: "DELETE", headers: TASKS });
      } finally {
        await Promise.all([a.close(), b.close(), c.close()]);
      }
    },
  );

  verifies("tasks.lease", "reports a call whose lease ran out as ended, retryable, and runs it again", async () => {
    // One clock for the store and both instances: leases run out, and are renewed, as the test moves it.
    const clock = new ManualClock();
    const store = new MemoryIdempotencyStore({ now: () => clock.now() });
    // A vouches for its run once, then loses the store: its renewals go nowhere, as if it had died.
    let renewals = 0;
    const lost: IdempotencyStore = Object.assign(Object.create(store) as MemoryIdempotencyStore, {
      renew: (key: IdempotencyKey, fingerprint: string, leaseMs: number) =>
        renewals++ === 0 ? store.renew(key, fingerprint, leaseMs) : Promise.resolve(),
    });
    const a = await startServer({ idempotencyStore: lost, taskLeaseMs: 300, clock });
    const b = await startServer({ idempotencyStore: store, taskLeaseMs: 300, clock });
    try {
      const headers = { ...TASKS, Prefer: "respond-async" };
      await callTool(a.baseUrl, { tool_id: "System.Sleep", input: { ms: 20_000 }, call_id: "orphan" }, headers);
      expect((await send(`${b.baseUrl}/tools/calls/orphan`, { headers: TASKS })).body.status).toBe("running");
      // Past its lease, nobody vouches for it: B takes it for dead.
      await clock.advance(400);
      const status = await send(`${b.baseUrl}/tools/calls/orphan`, { headers: TASKS });
      expect(status.body).toMatchObject({
        status: "completed",
        result: {
          success: false,
          error: { message: "The server running the call stopped before it finished", can_retry: true },
        },
      });
      const again = await callTool(
        b.baseUrl,
        { tool_id: "System.Sleep", input: { ms: 20_000 }, call_id: "orphan" },
        { ...headers, Prefer: "respond-async" },
      );
      expect(again.status).toBe(202);
      await clock.advance(500);
      // B renews its own run's lease: past 300 ms it is still running.
      expect((await send(`${b.baseUrl}/tools/calls/orphan`, { headers: TASKS })).body.status).toBe("running");
      await send(`${b.baseUrl}/tools/calls/orphan`, { method: "DELETE", headers: TASKS });
    } finally {
      await Promise.all([a.close(), b.close()]);
    }
  });
});
