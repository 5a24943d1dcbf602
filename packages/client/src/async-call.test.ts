// The client's side of the tasks extension (docs/protocol.md 9.3) against real @otc/server instances on loopback:
// callToolAsync and its handle (progress, result, cancel, abort), resuming a dropped stream, long polls where the
// stream is refused, an OXP 1.0 server, and calls another principal cannot see.
import {
  type Clock,
  createHandler,
  defineTool,
  type HandlerOptions,
  listen,
  OxpToolError,
  type RunningServer,
  systemClock,
  type Tool,
} from "@otc/server/node";
import { StepGate } from "@otc/test-helpers/step-gate";
import { verifies } from "@otc/test-helpers/verifies";
import type { CallProgress } from "@otc/types";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import type { AsyncCall } from "./async-call.js";
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

/** Runs of Work.Flaky by call_id: the first fails with can_retry. */
const flakyRuns = new Map<string, number>();

/** The steps of each call that the test has let run (the Work.Steps tool waits for the rest). */
const gate = new StepGate();
const allow = (callId: string, step?: number) => gate.allow(callId, step);

// A test's calls end with it, whatever it let them do: one that failed waiting for a step leaves none behind.
afterEach(() => gate.releaseAll());

/** Per call_id, whether its tool has seen its AbortSignal fire: a promise settled when it does. */
const toolAborts = new Map<string, { seen: Promise<void>; resolve: () => void }>();

/** The entry of `callId` in {@link toolAborts}, made on first use (by the tool or by the test, whichever is first). */
function abortOf(callId: string): { seen: Promise<void>; resolve: () => void } {
  let entry = toolAborts.get(callId);
  if (!entry) {
    let resolve = () => {};
    const seen = new Promise<void>((done) => {
      resolve = done;
    });
    entry = { seen, resolve };
    toolAborts.set(callId, entry);
  }
  return entry;
}

/** Resolves once the tool of call `callId` has seen its AbortSignal fire. */
const toolAborted = (callId: string) => abortOf(callId).seen;

const tools: Tool[] = [
  defineTool({
    toolkit: "Work",
    name: "Steps",
    version: "1.0.0",
    description: "Takes `steps` steps, reporting each; those past the first `free` wait until the test lets them run.",
    inputSchema: {
      type: "object",
      properties: {
        steps: { type: "integer", minimum: 1, maximum: 1000, description: "How many steps." },
        free: { type: "integer", minimum: 0, maximum: 1000, description: "How many steps run at once. Default all." },
      },
      required: ["steps"],
      additionalProperties: false,
    },
    outputSchema: { type: "object" },
    run: async ({ steps, free = steps }, context) => {
      context.signal.addEventListener("abort", () => abortOf(context.callId).resolve(), { once: true });
      for (let step = 1; step <= steps; step++) {
        if (step > free) {
          await gate.stepAllowed(context.callId, step, context.signal);
        }
        context.progress({ progress: step, total: steps, message: `step ${step}` });
      }
      return { steps };
    },
  }),
  defineTool({
    toolkit: "Work",
    name: "Flaky",
    version: "1.0.0",
    description: "Fails retryably on its first run for a call_id, once the test lets it (its step 1).",
    inputSchema: {},
    outputSchema: { type: "integer" },
    run: async (_input, context) => {
      const runs = (flakyRuns.get(context.callId) ?? 0) + 1;
      flakyRuns.set(context.callId, runs);
      if (runs === 1) {
        await gate.stepAllowed(context.callId, 1, context.signal);
        throw new OxpToolError("Not yet", { canRetry: true, retryAfterMs: 10 });
      }
      return runs;
    },
  }),
];

/**
 * The real clock, watched: `timerSet(ms)` resolves when a server next sets a timer of `ms` on it, as it does once it
 * holds a long poll of that length. The test then knows the server waits, instead of guessing how long it takes.
 */
function watchedClock(): { clock: Clock; timerSet(ms: number): Promise<void> } {
  const watchers = new Set<{ ms: number; resolve: () => void }>();
  const clock: Clock = {
    now: () => systemClock.now(),
    setTimeout: (callback, ms) => {
      const timer = systemClock.setTimeout(callback, ms);
      for (const watcher of [...watchers]) {
        if (watcher.ms === ms) {
          watchers.delete(watcher);
          watcher.resolve();
        }
      }
      return timer;
    },
    clearTimeout: (timer) => systemClock.clearTimeout(timer),
  };
  return { clock, timerSet: (ms) => new Promise((resolve) => watchers.add({ ms, resolve })) };
}

/** The servers' clock. */
const { clock, timerSet } = watchedClock();

/** Told of each long poll of a call's status the client sends (its `Prefer: wait`, in seconds), by call_id. */
const pollWatchers = new Map<string, (waitSeconds: number | undefined) => void>();

/**
 * Lets the call's steps run one at a time as the client follows it by polls of its status: each once the server
 * holds the poll the client just sent (it sets a timer of the wait asked for), or at once for a poll asked to be
 * answered at once. Each step is then a change that poll answers, and a client that asks wrongly still sees the end.
 */
function stepOnPolls(callId: string): void {
  let step = 0;
  pollWatchers.set(callId, (waitSeconds) => {
    const held = waitSeconds ? timerSet(waitSeconds * 1000) : Promise.resolve();
    void held.then(() => allow(callId, ++step));
  });
}

/** A real node:http OXP server on 127.0.0.1, two API keys, progress kept up to 50 times a second. */
const start = (options: Partial<HandlerOptions> = {}) =>
  listen(
    createHandler({
      tools,
      logger: false,
      auth: { apiKeys: [KEY_ONE, KEY_TWO] },
      progressPerSecond: 50,
      clock,
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

/** Told of each progress event of a call's event stream as its bytes reach the client (see {@link passing}), by call_id. */
const streamWatchers = new Map<string, Set<(progress: CallProgress) => void>>();

/** Tells `watcher` of each progress event of the call's streams as its bytes reach the client; returns how to stop. */
function watchStream(callId: string, watcher: (progress: CallProgress) => void): () => void {
  const watchers = streamWatchers.get(callId) ?? new Set();
  streamWatchers.set(callId, watchers);
  watchers.add(watcher);
  return () => watchers.delete(watcher);
}

/** Resolves with the call's next progress event once its bytes reach the client over an event stream. */
function nextStreamed(callId: string): Promise<CallProgress> {
  return new Promise((resolve) => {
    const stop = watchStream(callId, (progress) => {
      stop();
      resolve(progress);
    });
  });
}

/** An event stream's answer, whose progress events are told to the call's watchers as their bytes pass. */
function passing(request: Request, response: Response): Response {
  const segment = /\/tools\/calls\/([^/]+)\/events$/.exec(new URL(request.url).pathname)?.[1];
  const callId = segment === undefined ? undefined : decodeURIComponent(segment);
  if (callId === undefined || !streamWatchers.has(callId) || !response.body) {
    return response;
  }
  const decoder = new TextDecoder();
  let text = "";
  const body = response.body.pipeThrough(
    new TransformStream<Uint8Array, Uint8Array>({
      transform(chunk, controller) {
        controller.enqueue(chunk);
        text += decoder.decode(chunk, { stream: true });
        const events = text.split("\n\n");
        text = events.pop() ?? "";
        for (const event of events) {
          const data = /^data: (.*)$/m.exec(event)?.[1];
          if (/^event: progress$/m.test(event) && data !== undefined) {
            const progress = JSON.parse(data) as CallProgress;
            for (const watcher of [...(streamWatchers.get(callId) ?? [])]) {
              watcher(progress);
            }
          }
        }
      },
    }),
  );
  return new Response(body, { status: response.status, statusText: response.statusText, headers: response.headers });
}

/**
 * A client of `baseUrl` with KEY_ONE whose fetch records each request; `answer` may answer one itself, given the
 * fetch that passes it on to the server.
 */
function observed(
  baseUrl: string,
  options: {
    answer?: (
      request: Request,
      pass: (request: Request) => Promise<Response>,
    ) => Response | Promise<Response | undefined> | undefined;
  } & Partial<ClientOptions> = {},
) {
  const sent: Sent[] = [];
  const { answer, ...clientOptions } = options;
  const pass = async (request: Request) => passing(request, await fetch(request));
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
      const polled = /^\/tools\/calls\/([^/]+)$/.exec(new URL(request.url).pathname)?.[1];
      if (request.method === "GET" && polled !== undefined) {
        const wait = /\bwait=(\d+)/.exec(request.headers.get("prefer") ?? "")?.[1];
        pollWatchers.get(decodeURIComponent(polled))?.(wait === undefined ? undefined : Number(wait));
      }
      return (await answer?.(request, pass)) ?? pass(request);
    },
  });
  return { client, sent };
}

/**
 * A Work.Steps call of `count` steps, of which the first `free` run at once (by default none: each waits until the
 * test lets it run, see {@link allow}).
 */
const steps = (count: number, options: { free?: number; callId?: string } = {}) => ({
  tool_id: "Work.Steps",
  input: { steps: count, free: options.free ?? 0 },
  ...(options.callId ? { call_id: options.callId } : {}),
});

/** Every progress of `iterable`, in order; `onEach` is told of each as it comes. */
async function collect(
  iterable: AsyncIterable<CallProgress>,
  onEach: (progress: CallProgress) => void = () => {},
): Promise<CallProgress[]> {
  const seen: CallProgress[] = [];
  for await (const progress of iterable) {
    seen.push(progress);
    onEach(progress);
  }
  return seen;
}

/**
 * Every progress of `call`, whose steps wait for the test: lets its first step run, then each next one once the
 * progress before it is seen here. None happens before the one before it was seen: none can supersede another
 * unseen, however late a busy machine runs this reader. (A client that lost one would stall the call, and the test
 * would fail at the gate's time limit.)
 */
function collectStepping(call: AsyncCall): Promise<CallProgress[]> {
  allow(call.callId, 1);
  return collect(call.progress, (progress) => allow(call.callId, progress.progress + 1));
}
describe("callToolAsync", () => {
  verifies(["tasks.respond-async", "tasks.events"], "streams every progress in order, then the result", async () => {
    const { client, sent } = observed(server.url);
    const call = await client.callToolAsync(steps(5));
    expect(call.task).toBe(true);
    expect(call.callId).toMatch(/^[0-9a-f-]{36}$/);
    // Each step waits until the progress before it was seen here.
    const progress = await collectStepping(call);
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
    const call = await client.callToolAsync(steps(4));
    // The second reader sees each progress in the same turn as the first, which steps the call.
    const [first, second, response] = await Promise.all([collectStepping(call), collect(call.progress), call.result()]);
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
    const call = await client.callToolAsync(steps(1, { free: 1 }), { waitSeconds: 5 });
    expect(call.task).toBe(false);
    expect(sent[1]?.prefer).toBe("respond-async, wait=5");
    expect(await collect(call.progress)).toEqual([]);
    expect(await call.result()).toMatchObject({ success: true, value: { steps: 1 } });
    expect(await call.status()).toMatchObject({ call_id: call.callId, status: "completed" });
    expect(sent).toHaveLength(2);
    await expect(client.callToolAsync(steps(1, { free: 1 }), { waitSeconds: 31 })).rejects.toThrow(RangeError);
  });

  verifies("tasks.respond-async", "speaks the draft's envelope too: a 202's status, a 200 unwrapped", async () => {
    const { client } = observed(server.url, { wire: "envelope" });
    const task = await client.callToolAsync(steps(2));
    expect(task.task).toBe(true);
    allow(task.callId);
    expect(await task.result()).toMatchObject({ success: true, value: { steps: 2 } });
    const quick = await client.callToolAsync(steps(1, { free: 1 }), { waitSeconds: 5 });
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
    // Its first run fails now, after the 202.
    allow("flaky-1");
    expect(await call.result()).toMatchObject({ success: true, value: 2 });
    expect(flakyRuns.get("flaky-1")).toBe(2);
    expect(sent.filter((request) => request.method === "POST")).toHaveLength(2);
    // With one attempt, the failure is the answer.
    const once = createClient({ baseUrl: server.url, apiKey: KEY_ONE, retry: { maxAttempts: 1 } });
    const failing = await once.callToolAsync({ tool_id: "Work.Flaky", input: {}, call_id: "flaky-2" });
    allow("flaky-2");
    expect(await failing.result()).toMatchObject({ success: false, error: { message: "Not yet", can_retry: true } });
  });
});

describe("a dropped stream", () => {
  verifies("tasks.events", "is reopened after the last event seen, and no progress comes twice", async () => {
    let streams = 0;
    const { client, sent } = observed(server.url, {
      // The first stream breaks after its second progress event, as a dropped connection does.
      answer: async (request, pass) => {
        if (!request.url.endsWith("/events") || streams++ > 0) {
          return undefined;
        }
        const real = await pass(request);
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
    const call = await client.callToolAsync(steps(8));
    const progress = await collectStepping(call);
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
      // The one stream this client may hold, held: its first progress (let run only now) came over it.
      const holder = await client.callToolAsync(steps(40));
      const held = holder.progress[Symbol.asyncIterator]();
      allow(holder.callId, 1);
      await held.next();
      const call = await client.callToolAsync(steps(5));
      stepOnPolls(call.callId);
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
    const call = await client.callToolAsync(steps(3));
    stepOnPolls(call.callId);
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
    const call = await client.callToolAsync(steps(3), {
      pollWaitSeconds: 2,
      onFollow: (mode, why) => told.push([mode, why]),
    });
    allow(call.callId);
    expect(await call.result()).toMatchObject({ success: true });
    expect(told).toEqual([
      ["events", undefined],
      ["polling", "the event stream was answered 404 application/json"],
    ]);
    const polls = sent.filter((request) => request.path === `/tools/calls/${call.callId}`);
    expect(polls.length).toBeGreaterThanOrEqual(1);
    expect(polls.every((request) => request.prefer === "wait=2")).toBe(true);
    await expect(client.callToolAsync(steps(1), { pollWaitSeconds: 31 })).rejects.toThrow(/pollWaitSeconds/);
    await expect(client.followCall(call.callId, { pollWaitSeconds: -1 })).rejects.toThrow(RangeError);
  });

  it("say why long polls took over from a stream that failed, and nothing more when the stream brings the result", async () => {
    const { client } = observed(server.url, {
      retry: { maxAttempts: 1 },
      answer: (request) =>
        request.url.endsWith("/events") ? Promise.reject(new TypeError("refused here")) : undefined,
    });
    const told: [string, string | undefined][] = [];
    const failing = await client.callToolAsync(steps(2), { onFollow: (mode, why) => told.push([mode, why]) });
    allow(failing.callId);
    expect(await failing.result()).toMatchObject({ success: true });
    expect(told).toEqual([
      ["events", undefined],
      ["polling", "the event stream failed: refused here"],
    ]);

    const streamed: string[] = [];
    const call = await observed(server.url).client.callToolAsync(steps(2), {
      onFollow: (mode) => streamed.push(mode),
    });
    allow(call.callId);
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
    // Its steps wait for the test, which lets none run: the call runs until cancelled.
    const call = await client.callToolAsync(steps(100));
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
      const call = await client.callToolAsync(steps(100));
      const streamed = nextStreamed(call.callId);
      const reading = collect(call.progress);
      // One step runs, its progress goes out over the stream; the call then waits for its second until cancelled.
      allow(call.callId, 1);
      expect(await streamed).toMatchObject({ progress: 1 });
      expect((await call.status()).progress).toMatchObject({ progress: 1 });
      const status = await call.cancel();
      expect(status).toMatchObject({
        call_id: call.callId,
        status: "cancelled",
        result: { success: false, error: { message: "The call was cancelled", can_retry: false } },
      });
      expect((await reading).length).toBeGreaterThanOrEqual(1);
      expect(await call.result()).toEqual(status.result);
      await toolAborted(call.callId);
      // Cancelling again, by id, changes nothing.
      expect(await client.cancelCall(call.callId)).toMatchObject({ status: "cancelled", result: status.result });
    },
  );
});

describe("an AbortSignal", () => {
  it("stops waiting here and leaves the call running, unless cancelOnAbort", async () => {
    const { client } = observed(server.url);
    const controller = new AbortController();
    const call = await client.callToolAsync(steps(100), { signal: controller.signal });
    const iterator = call.progress[Symbol.asyncIterator]();
    allow(call.callId, 1);
    await iterator.next();
    const reason = new Error("enough");
    controller.abort(reason);
    await expect(call.result()).rejects.toBe(reason);
    await expect(iterator.next()).rejects.toBe(reason);
    expect((await client.callStatus(call.callId)).status).toBe("running");
    // An explicit cancel still works after the abort.
    expect((await call.cancel()).status).toBe("cancelled");

    const cancelling = new AbortController();
    const second = await client.callToolAsync(steps(100), { signal: cancelling.signal, cancelOnAbort: true });
    cancelling.abort();
    await expect(second.result()).rejects.toMatchObject({ name: "AbortError" });
    // The abort sends a DELETE: a long poll of the status answers once it has ended the call (its steps wait for a
    // test that lets none run: only the cancel changes it), which fired the tool's signal.
    expect((await client.callStatus(second.callId, { waitSeconds: 30 })).status).toBe("cancelled");
    await toolAborted(second.callId);
  });

  it("aborted before the call is posted, sends nothing but discovery", async () => {
    const { client, sent } = observed(server.url);
    await expect(client.callToolAsync(steps(1), { signal: AbortSignal.abort() })).rejects.toMatchObject({
      name: "AbortError",
    });
    expect(sent.filter((request) => request.method === "POST")).toHaveLength(0);
  });
});

describe("an OXP 1.0 server", () => {
  verifies("extensions.off-without-header", "gets a plain call, and a settled handle", async () => {
    const { client, sent } = observed(plain.url);
    const call = await client.callToolAsync(steps(3, { free: 3 }));
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
    const call = await mine.callToolAsync(steps(100));
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
    const call = await client.callToolAsync(steps(3, { callId: "a call/with ?odd# chars" }));
    const first = await client.callStatus(call.callId);
    // The server sets a timer of the wait asked for once it holds the long poll: then the call's first step runs.
    const holding = timerSet(5_000);
    const next = client.callStatus(call.callId, { waitSeconds: 5 });
    await Promise.race([holding, next]);
    allow(call.callId, 1);
    expect((await next).progress?.progress ?? 0).toBeGreaterThan(first.progress?.progress ?? 0);
    expect(sent.at(-1)).toMatchObject({ path: "/tools/calls/a call/with ?odd# chars", prefer: "wait=5" });
    allow(call.callId);
    expect(await call.result()).toMatchObject({ success: true });
    await expect(client.callStatus("..")).rejects.toThrow(RangeError);
  });
});
