// The client's side of the tasks extension (docs/protocol.md 9.3) against real @otc/server instances on loopback:
// callToolAsync and its handle (progress, result, cancel, abort), resuming a dropped stream, long polls where the
// stream is refused, an OXP 1.0 server, and calls another principal cannot see.
import {
  createHandler,
  defineTool,
  type HandlerOptions,
  listen,
  OxpToolError,
  type RunningServer,
  type Tool,
} from "@otc/server/node";
import { verifies } from "@otc/test-helpers/verifies";
import type { CallProgress } from "@otc/types";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ClientOptions, createClient } from "./client.js";
import {
  OxpExtensionUnavailableError,
  OxpProtocolError,
  OxpResponseTooLargeError,
  OxpServerError,
  OxpValidationError,
} from "./errors.js";

const KEY_ONE = "async-key-one-0123456789abcdef";
const KEY_TWO = "async-key-two-0123456789abcdef";

/** The call_ids whose tool saw its AbortSignal fire. */
const aborted = new Set<string>();
/** Runs of Work.Flaky by call_id: the first fails with can_retry. */
const flakyRuns = new Map<string, number>();

const wait = (ms: number, signal: AbortSignal, callId: string) =>
  new Promise<void>((resolve, reject) => {
    const timer = setTimeout(resolve, ms);
    signal.addEventListener(
      "abort",
      () => {
        clearTimeout(timer);
        aborted.add(callId);
        reject(signal.reason);
      },
      { once: true },
    );
  });

const tools: Tool[] = [
  defineTool({
    toolkit: "Work",
    name: "Steps",
    version: "1.0.0",
    description: "Takes `steps` steps of `ms` milliseconds, reporting each.",
    inputSchema: {
      type: "object",
      properties: {
        steps: { type: "integer", minimum: 1, maximum: 1000, description: "How many steps." },
        ms: { type: "integer", minimum: 0, maximum: 10000, description: "How long each step takes." },
      },
      required: ["steps", "ms"],
      additionalProperties: false,
    },
    outputSchema: { type: "object" },
    run: async ({ steps, ms }, context) => {
      for (let step = 1; step <= steps; step++) {
        await wait(ms, context.signal, context.callId);
        context.progress({ progress: step, total: steps, message: `step ${step}` });
      }
      return { steps };
    },
  }),
  defineTool({
    toolkit: "Work",
    name: "Flaky",
    version: "1.0.0",
    description: "Fails retryably on its first run for a call_id, after a moment.",
    inputSchema: {},
    outputSchema: { type: "integer" },
    run: async (_input, context) => {
      const runs = (flakyRuns.get(context.callId) ?? 0) + 1;
      flakyRuns.set(context.callId, runs);
      await wait(100, context.signal, context.callId);
      if (runs === 1) {
        throw new OxpToolError("Not yet", { canRetry: true, retryAfterMs: 10 });
      }
      return runs;
    },
  }),
];

/** A real node:http OXP server on 127.0.0.1, two API keys, progress kept up to 50 times a second. */
const start = (options: Partial<HandlerOptions> = {}) =>
  listen(
    createHandler({
      tools,
      logger: false,
      auth: { apiKeys: [KEY_ONE, KEY_TWO] },
      progressPerSecond: 50,
      ...options,
    }),
    { port: 0 },
  );

let server: RunningServer;
/** The same server with every extension off: OXP 1.0. */
let plain: RunningServer;
/** A server that keeps at most one event stream open per client. */
let narrow: RunningServer;
beforeAll(async () => {
  [server, plain, narrow] = await Promise.all([
    start(),
    start({ extensions: false }),
    start({ eventStreams: { maxPerClient: 1 } }),
  ]);
});
afterAll(() => Promise.all([server, plain, narrow].map((running) => running?.close())));

/** One request the client sent: its method, path and the headers the tests look at. */
interface Sent {
  method: string;
  path: string;
  extensions: string | null;
  prefer: string | null;
  lastEventId: string | null;
}

/** A client of `baseUrl` with KEY_ONE whose fetch records each request; `answer` may answer one itself. */
function observed(
  baseUrl: string,
  options: {
    answer?: (request: Request) => Response | Promise<Response | undefined> | undefined;
  } & Partial<ClientOptions> = {},
) {
  const sent: Sent[] = [];
  const { answer, ...clientOptions } = options;
  const client = createClient({
    baseUrl,
    apiKey: KEY_ONE,
    retry: { baseDelayMs: 10 },
    ...clientOptions,
    fetch: async (input, init) => {
      const request = new Request(input, init);
      sent.push({
        method: request.method,
        path: decodeURIComponent(new URL(request.url).pathname),
        extensions: request.headers.get("oxp-extensions"),
        prefer: request.headers.get("prefer"),
        lastEventId: request.headers.get("last-event-id"),
      });
      return (await answer?.(request)) ?? fetch(request);
    },
  });
  return { client, sent };
}

const steps = (count: number, ms: number, callId?: string) => ({
  tool_id: "Work.Steps",
  input: { steps: count, ms },
  ...(callId ? { call_id: callId } : {}),
});

/** Every progress of `iterable`, in order. */
async function collect(iterable: AsyncIterable<CallProgress>): Promise<CallProgress[]> {
  const seen: CallProgress[] = [];
  for await (const progress of iterable) {
    seen.push(progress);
  }
  return seen;
}

const until = async (check: () => boolean | Promise<boolean>, ms = 3_000) => {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) {
      throw new Error("the condition did not come true in time");
    }
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
};

describe("callToolAsync", () => {
  verifies(["tasks.respond-async", "tasks.events"], "streams every progress in order, then the result", async () => {
    const { client, sent } = observed(server.url);
    // Steps long enough that the stream is open before the second one, however busy the machine.
    const call = await client.callToolAsync(steps(5, 120));
    expect(call.task).toBe(true);
    expect(call.callId).toMatch(/^[0-9a-f-]{36}$/);
    const progress = await collect(call.progress);
    expect(progress.map((entry) => entry.progress)).toEqual([1, 2, 3, 4, 5]);
    expect(progress[0]).toEqual({ progress: 1, total: 5, message: "step 1" });
    expect(await call.result()).toMatchObject({ success: true, value: { steps: 5 }, call_id: call.callId });
    // One POST asking for a task, one stream; no status polls while the stream runs.
    expect(sent.map((request) => `${request.method} ${request.path}`)).toEqual([
      "GET /.well-known/oxp",
      "POST /tools/call",
      `GET /tools/calls/${call.callId}/events`,
    ]);
    expect(sent[1]).toMatchObject({ extensions: "tasks", prefer: "respond-async" });
    expect(sent[2]).toMatchObject({ extensions: "tasks", lastEventId: null });
  });

  it("reads the result without anyone reading progress, and shares one stream among readers", async () => {
    const { client, sent } = observed(server.url);
    const call = await client.callToolAsync(steps(4, 120));
    const [first, second, response] = await Promise.all([
      collect(call.progress),
      collect(call.progress),
      call.result(),
    ]);
    expect(first.map((entry) => entry.progress)).toEqual([1, 2, 3, 4]);
    expect(second).toEqual(first);
    expect(response).toMatchObject({ success: true });
    expect(sent.filter((request) => request.path.endsWith("/events"))).toHaveLength(1);
    // Ended: a late reader gets nothing, the result stays.
    expect(await collect(call.progress)).toEqual([]);
    expect(await call.result()).toBe(response);
  });

  verifies("tasks.respond-async", "settles at once a call that ends within waitSeconds", async () => {
    const { client, sent } = observed(server.url);
    const call = await client.callToolAsync(steps(1, 10), { waitSeconds: 5 });
    expect(call.task).toBe(false);
    expect(sent[1]?.prefer).toBe("respond-async, wait=5");
    expect(await collect(call.progress)).toEqual([]);
    expect(await call.result()).toMatchObject({ success: true, value: { steps: 1 } });
    expect(await call.status()).toMatchObject({ call_id: call.callId, status: "completed" });
    expect(sent).toHaveLength(2);
    await expect(client.callToolAsync(steps(1, 1), { waitSeconds: 31 })).rejects.toThrow(RangeError);
  });

  verifies("tasks.respond-async", "speaks the draft's envelope too: a 202's status, a 200 unwrapped", async () => {
    const { client } = observed(server.url, { wire: "envelope" });
    const task = await client.callToolAsync(steps(2, 50));
    expect(task.task).toBe(true);
    expect(await task.result()).toMatchObject({ success: true, value: { steps: 2 } });
    const quick = await client.callToolAsync(steps(1, 1), { waitSeconds: 5 });
    expect(quick.task).toBe(false);
    expect(await quick.result()).toMatchObject({ success: true, value: { steps: 1 } });
  });

  verifies("tasks.respond-async", "throws the call's checks as callTool does: a 422 is never a task", async () => {
    const { client } = observed(server.url);
    await expect(client.callToolAsync({ tool_id: "Work.Steps", input: { steps: "x" } })).rejects.toBeInstanceOf(
      OxpValidationError,
    );
  });

  verifies("tasks.one-record", "posts a retryable failure again with its call_id, as callTool retries", async () => {
    const { client, sent } = observed(server.url);
    const call = await client.callToolAsync({ tool_id: "Work.Flaky", input: {}, call_id: "flaky-1" });
    expect(call.task).toBe(true);
    expect(await call.result()).toMatchObject({ success: true, value: 2 });
    expect(flakyRuns.get("flaky-1")).toBe(2);
    expect(sent.filter((request) => request.method === "POST")).toHaveLength(2);
    // With one attempt, the failure is the answer.
    const once = createClient({ baseUrl: server.url, apiKey: KEY_ONE, retry: { maxAttempts: 1 } });
    const failing = await once.callToolAsync({ tool_id: "Work.Flaky", input: {}, call_id: "flaky-2" });
    expect(await failing.result()).toMatchObject({ success: false, error: { message: "Not yet", can_retry: true } });
  });
});

describe("a dropped stream", () => {
  verifies("tasks.events", "is reopened after the last event seen, and no progress comes twice", async () => {
    let streams = 0;
    const { client, sent } = observed(server.url, {
      // The first stream breaks after its second progress event, as a dropped connection does.
      answer: async (request) => {
        if (!request.url.endsWith("/events") || streams++ > 0) {
          return undefined;
        }
        const real = await fetch(request);
        const reader = (real.body as ReadableStream<Uint8Array>).getReader();
        const decoder = new TextDecoder();
        let text = "";
        const body = new ReadableStream<Uint8Array>({
          async pull(controller) {
            const chunk = await reader.read();
            if (chunk.done) {
              controller.close();
              return;
            }
            controller.enqueue(chunk.value);
            text += decoder.decode(chunk.value, { stream: true });
            if ((text.match(/event: progress/g) ?? []).length >= 2) {
              await reader.cancel();
              controller.error(new TypeError("terminated"));
            }
          },
        });
        return new Response(body, { status: real.status, headers: real.headers });
      },
    });
    const call = await client.callToolAsync(steps(8, 100));
    const progress = await collect(call.progress);
    expect(await call.result()).toMatchObject({ success: true, value: { steps: 8 } });
    const numbers = progress.map((entry) => entry.progress);
    expect(numbers).toEqual([...new Set(numbers)].sort((a, b) => a - b));
    expect(numbers.at(-1)).toBe(8);
    const opened = sent.filter((request) => request.path.endsWith("/events"));
    expect(opened).toHaveLength(2);
    expect(opened[0]?.lastEventId).toBeNull();
    expect(Number(opened[1]?.lastEventId)).toBeGreaterThanOrEqual(2);
  });
});

describe("long polls", () => {
  verifies(
    ["tasks.long-poll", "tasks.events-bounded"],
    "take over when the server refuses the stream (429)",
    async () => {
      const { client, sent } = observed(narrow.url);
      // The one stream this client may hold, held.
      const holder = await client.callToolAsync(steps(40, 50));
      const held = holder.progress[Symbol.asyncIterator]();
      await held.next();
      const call = await client.callToolAsync(steps(5, 60));
      const progress = await collect(call.progress);
      expect(await call.result()).toMatchObject({ success: true, value: { steps: 5 } });
      expect(progress.length).toBeGreaterThanOrEqual(1);
      const numbers = progress.map((entry) => entry.progress);
      expect(numbers).toEqual([...new Set(numbers)].sort((a, b) => a - b));
      const polls = sent.filter((request) => request.path === `/tools/calls/${call.callId}`);
      expect(polls.length).toBeGreaterThanOrEqual(1);
      expect(polls.every((request) => request.prefer === "wait=30" && request.extensions === "tasks")).toBe(true);
      await held.return?.();
      await holder.cancel();
    },
  );

  it("take over where the server has no event stream (an older server's 404)", async () => {
    const { client, sent } = observed(server.url, {
      answer: (request) =>
        request.url.endsWith("/events")
          ? Response.json({ message: "Not found" }, { status: 404, headers: { "oxp-version": "1.0" } })
          : undefined,
    });
    const call = await client.callToolAsync(steps(3, 60));
    const [progress, response] = await Promise.all([collect(call.progress), call.result()]);
    expect(response).toMatchObject({ success: true });
    expect(progress.every((entry) => entry.total === 3)).toBe(true);
    expect(sent.filter((request) => request.path.endsWith("/events"))).toHaveLength(1);
    expect(sent.filter((request) => request.path === `/tools/calls/${call.callId}`).length).toBeGreaterThanOrEqual(1);
  });
});

describe("onFollow and pollWaitSeconds", () => {
  it("tell how the call is followed, and how long each long poll asks the server to hold it", async () => {
    const { client, sent } = observed(server.url, {
      answer: (request) =>
        request.url.endsWith("/events")
          ? Response.json({ message: "Not found" }, { status: 404, headers: { "oxp-version": "1.0" } })
          : undefined,
    });
    const told: [string, string | undefined][] = [];
    const call = await client.callToolAsync(steps(3, 60), {
      pollWaitSeconds: 2,
      onFollow: (mode, why) => told.push([mode, why]),
    });
    expect(await call.result()).toMatchObject({ success: true });
    expect(told).toEqual([
      ["events", undefined],
      ["polling", "the event stream was answered 404 application/json"],
    ]);
    const polls = sent.filter((request) => request.path === `/tools/calls/${call.callId}`);
    expect(polls.length).toBeGreaterThanOrEqual(1);
    expect(polls.every((request) => request.prefer === "wait=2")).toBe(true);
    await expect(client.callToolAsync(steps(1, 1), { pollWaitSeconds: 31 })).rejects.toThrow(/pollWaitSeconds/);
    await expect(client.followCall(call.callId, { pollWaitSeconds: -1 })).rejects.toThrow(RangeError);
  });

  it("say why long polls took over from a stream that failed, and nothing more when the stream brings the result", async () => {
    const { client } = observed(server.url, {
      retry: { maxAttempts: 1 },
      answer: (request) =>
        request.url.endsWith("/events") ? Promise.reject(new TypeError("refused here")) : undefined,
    });
    const told: [string, string | undefined][] = [];
    const failing = await client.callToolAsync(steps(2, 60), { onFollow: (mode, why) => told.push([mode, why]) });
    expect(await failing.result()).toMatchObject({ success: true });
    expect(told).toEqual([
      ["events", undefined],
      ["polling", "the event stream failed: refused here"],
    ]);

    const streamed: string[] = [];
    const call = await observed(server.url).client.callToolAsync(steps(2, 60), {
      onFollow: (mode) => streamed.push(mode),
    });
    expect(await call.result()).toMatchObject({ success: true });
    expect(streamed).toEqual(["events"]);
  });
});

describe("a stream that breaks the spec", () => {
  const streaming = (text: string) => (request: Request) =>
    request.url.endsWith("/events")
      ? new Response(text, { headers: { "content-type": "text/event-stream", "oxp-version": "1.0" } })
      : undefined;

  it.each([
    ["progress that is no CallProgress", 'id: 1\nevent: progress\ndata: {"progress": "half"}\n\n', OxpProtocolError],
    ["a result that is not JSON", "id: result\nevent: result\ndata: {nope\n\n", OxpProtocolError],
    ["an event past maxResponseBytes", `event: progress\ndata: ${"x".repeat(5_000)}\n\n`, OxpResponseTooLargeError],
  ])("is an error, not retried: %s", async (_name, text, kind) => {
    const { client } = observed(server.url, { answer: streaming(text), maxResponseBytes: 4_096 });
    const call = await client.callToolAsync(steps(100, 50));
    await expect(call.result()).rejects.toBeInstanceOf(kind);
    await expect(collect(call.progress)).rejects.toBeInstanceOf(kind);
    await call.cancel();
  });
});

describe("cancel", () => {
  verifies(
    "tasks.cancel",
    "fires the tool's signal, resolves to the cancelled status and ends the handle",
    async () => {
      const { client } = observed(server.url);
      const call = await client.callToolAsync(steps(100, 50));
      const reading = collect(call.progress);
      await until(async () => (await call.status()).progress !== undefined);
      const status = await call.cancel();
      expect(status).toMatchObject({
        call_id: call.callId,
        status: "cancelled",
        result: { success: false, error: { message: "The call was cancelled", can_retry: false } },
      });
      expect((await reading).length).toBeGreaterThanOrEqual(1);
      expect(await call.result()).toEqual(status.result);
      await until(() => aborted.has(call.callId));
      // Cancelling again, by id, changes nothing.
      expect(await client.cancelCall(call.callId)).toMatchObject({ status: "cancelled", result: status.result });
    },
  );
});

describe("an AbortSignal", () => {
  it("stops waiting here and leaves the call running, unless cancelOnAbort", async () => {
    const { client } = observed(server.url);
    const controller = new AbortController();
    const call = await client.callToolAsync(steps(100, 50), { signal: controller.signal });
    const iterator = call.progress[Symbol.asyncIterator]();
    await iterator.next();
    const reason = new Error("enough");
    controller.abort(reason);
    await expect(call.result()).rejects.toBe(reason);
    await expect(iterator.next()).rejects.toBe(reason);
    expect((await client.callStatus(call.callId)).status).toBe("running");
    // An explicit cancel still works after the abort.
    expect((await call.cancel()).status).toBe("cancelled");

    const cancelling = new AbortController();
    const second = await client.callToolAsync(steps(100, 50), { signal: cancelling.signal, cancelOnAbort: true });
    cancelling.abort();
    await expect(second.result()).rejects.toMatchObject({ name: "AbortError" });
    await until(async () => (await client.callStatus(second.callId)).status === "cancelled");
    await until(() => aborted.has(second.callId));
  });

  it("aborted before the call is posted, sends nothing but discovery", async () => {
    const { client, sent } = observed(server.url);
    await expect(client.callToolAsync(steps(1, 1), { signal: AbortSignal.abort() })).rejects.toMatchObject({
      name: "AbortError",
    });
    expect(sent.filter((request) => request.method === "POST")).toHaveLength(0);
  });
});

describe("an OXP 1.0 server", () => {
  verifies("extensions.off-without-header", "gets a plain call, and a settled handle", async () => {
    const { client, sent } = observed(plain.url);
    const call = await client.callToolAsync(steps(3, 20));
    expect(call.task).toBe(false);
    expect(await collect(call.progress)).toEqual([]);
    expect(await call.result()).toMatchObject({ success: true, value: { steps: 3 } });
    expect(await call.cancel()).toMatchObject({ status: "completed", result: { success: true } });
    expect(sent.map((request) => `${request.method} ${request.path}`)).toEqual([
      "GET /.well-known/oxp",
      "POST /tools/call",
    ]);
    expect(sent[1]).toMatchObject({ extensions: null, prefer: null });
    await expect(client.callStatus(call.callId)).rejects.toBeInstanceOf(OxpExtensionUnavailableError);
    await expect(client.cancelCall(call.callId)).rejects.toBeInstanceOf(OxpExtensionUnavailableError);
    await expect(client.followCall(call.callId)).rejects.toBeInstanceOf(OxpExtensionUnavailableError);
    expect(sent).toHaveLength(2);
  });
});

describe("another principal", () => {
  verifies("tasks.status", "can neither read, follow nor cancel the call", async () => {
    const mine = createClient({ baseUrl: server.url, apiKey: KEY_ONE });
    const theirs = createClient({ baseUrl: server.url, apiKey: KEY_TWO });
    const call = await mine.callToolAsync(steps(100, 50));
    for (const attempt of [
      () => theirs.callStatus(call.callId),
      () => theirs.followCall(call.callId),
      () => theirs.cancelCall(call.callId),
    ]) {
      await expect(attempt()).rejects.toMatchObject({ constructor: OxpServerError, status: 404 });
    }
    expect((await mine.callStatus(call.callId)).status).toBe("running");
    // The owner finds it again by id, from another client with the same credentials.
    const again = await createClient({ baseUrl: server.url, apiKey: KEY_ONE }).followCall(call.callId);
    expect(again.task).toBe(true);
    expect((await again.cancel()).status).toBe("cancelled");
    expect(await call.result()).toMatchObject({ success: false, error: { message: "The call was cancelled" } });
  });
});

describe("callStatus", () => {
  verifies("tasks.long-poll", "waits for a change with waitSeconds, and names odd call_ids safely", async () => {
    const { client, sent } = observed(server.url);
    const call = await client.callToolAsync(steps(3, 300, "a call/with ?odd# chars"));
    const first = await client.callStatus(call.callId);
    const next = await client.callStatus(call.callId, { waitSeconds: 5 });
    expect(next.progress?.progress ?? 0).toBeGreaterThan(first.progress?.progress ?? 0);
    expect(sent.at(-1)).toMatchObject({ path: "/tools/calls/a call/with ?odd# chars", prefer: "wait=5" });
    expect(await call.result()).toMatchObject({ success: true });
    await expect(client.callStatus("..")).rejects.toThrow(RangeError);
  });
});
