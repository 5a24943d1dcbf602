// The bridge's tools/call: with a progress token over the tasks extension (notifications/progress), without one a synchronous call; a cancelled request DELETEs the OXP call either way, and an OXP 1.0 server is called as before.
import { Client as V2Client, StreamableHTTPClientTransport as V2HttpTransport } from "@modelcontextprotocol/client";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js";
import { type ProgressNotification, ProgressNotificationSchema } from "@modelcontextprotocol/sdk/types.js";
import { createServer, defineTool, listen, OxpToolError, type RunningServer } from "@otc/server";
import type { CallStatus } from "@otc/types";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createMcpBridge, ERROR_META_KEY } from "../src/bridge.js";
import { serveHttp } from "../src/transports.js";

/** A call the tool started: its call_id, and the reason its signal fired with, once it has. */
interface Run {
  callId: string;
  aborted: Promise<unknown>;
}

/** Told of the next call the tool starts (see {@link startedBy}). */
let onRun: ((run: Run) => void) | undefined;

/**
 * What the latest {@link bridged} client got, what its bridge asked the OXP server and read of event streams (as it
 * read it), and the waits on them.
 */
let seen: {
  progress: readonly unknown[];
  requests: readonly string[];
  streamed: readonly string[];
  waiting: Set<() => void>;
} = { progress: [], requests: [], streamed: [], waiting: new Set() };

/**
 * Resolves once `check` holds, looked at again on every notification the latest bridged client gets, every request
 * its bridge makes and every piece of an event stream it reads: an event, however slow the machine. Rejects with
 * `signal`'s reason when it fires first (a waiting tool's run that was cancelled).
 */
function when(check: () => boolean, signal?: AbortSignal): Promise<void> {
  const { waiting } = seen;
  return new Promise((resolve, reject) => {
    const stop = () => {
      waiting.delete(look);
      signal?.removeEventListener("abort", onAbort);
    };
    const look = () => {
      if (check()) {
        stop();
        resolve();
      }
    };
    const onAbort = () => {
      stop();
      reject(signal?.reason);
    };
    if (signal?.aborted) {
      reject(signal.reason);
      return;
    }
    waiting.add(look);
    signal?.addEventListener("abort", onAbort, { once: true });
    look();
  });
}

/** Resolves once the latest bridged client has had `count` progress notifications (see {@link when}). */
function notified(count: number, signal?: AbortSignal): Promise<void> {
  const { progress } = seen;
  return when(() => progress.length >= count, signal);
}

/** Never resolves; rejects with the signal's reason once it fires. */
function untilAborted(signal: AbortSignal): Promise<never> {
  return new Promise((_resolve, reject) => {
    if (signal.aborted) {
      reject(signal.reason);
      return;
    }
    signal.addEventListener("abort", () => reject(signal.reason), { once: true });
  });
}

const steps = defineTool({
  toolkit: "Work",
  name: "Steps",
  version: "1.0.0",
  description:
    "Reports `steps` steps; `paced`, each after the client got the one before; `hold`, then runs until its signal fires.",
  inputSchema: {
    type: "object",
    properties: {
      steps: { type: "integer", minimum: 1, description: "How many steps." },
      paced: {
        type: "boolean",
        description: "Report a step only once the MCP client got the one before (a progress token is needed).",
      },
      hold: { type: "boolean", description: "After the steps, run on until the signal fires." },
      fail: { type: "boolean", description: "Fail after the steps." },
    },
    required: ["steps"],
  },
  outputSchema: { type: "integer" },
  run: async ({ steps: count, paced, hold, fail }, { callId, progress, signal }) => {
    onRun?.({
      callId,
      aborted: new Promise((resolve) => signal.addEventListener("abort", () => resolve(signal.reason), { once: true })),
    });
    for (let step = 1; step <= count; step++) {
      progress({ progress: step, total: count, message: `Step ${step} of ${count}` });
      // Paced: every step is its own notification, in whatever time the machine takes, instead of a step per N ms.
      if (paced) {
        await notified(step, signal);
      }
    }
    if (hold) {
      await untilAborted(signal);
    }
    if (fail) {
      throw new OxpToolError("The work could not be finished.", { additionalPromptContent: "Try fewer steps." });
    }
    return count;
  },
});

/** Runs of Work.Flaky so far, by `key`: its first run fails, retryably, after three steps. */
const flakyRuns = new Map<string, number>();

const flaky = defineTool({
  toolkit: "Work",
  name: "Flaky",
  version: "1.0.0",
  description:
    "Reports five steps, each once the client got the one before; the first run of each `key` fails after three, and may be retried.",
  inputSchema: {
    type: "object",
    properties: { key: { type: "string", description: "Which runs count together." } },
    required: ["key"],
  },
  outputSchema: { type: "string" },
  run: async ({ key }, { progress, signal }) => {
    const run = (flakyRuns.get(key) ?? 0) + 1;
    flakyRuns.set(key, run);
    for (let step = 1; step <= 5; step++) {
      progress({ progress: step, total: 5, message: `Run ${run}, step ${step}` });
      const { requests, streamed } = seen;
      if (run === 2 && step === 1) {
        // The second run's first step goes out in the repost's 202 (which the OXP client takes as seen, without
        // passing it on); the next ones come on its event stream once the bridge follows it.
        await when(() => requests.filter((request) => /^GET \S+\/events\b/.test(request)).length === 2, signal);
      }
      if (run === 2 && (step === 2 || step === 3)) {
        // Steps 2 and 3 are what the bridge must not send again: each goes on once the bridge has read it, so that it
        // reaches the bridge on its own (read with the next, only the latest would).
        await when(() => streamed.some((text) => text.includes(`"message":"Run 2, step ${step}"`)), signal);
      }
      // The second run's steps 1 to 3 were got already (the first run's): it goes on at once to step 4.
      await notified(step, signal);
      if (run === 1 && step === 3) {
        throw new OxpToolError("A hiccup.", { canRetry: true, retryAfterMs: 10 });
      }
    }
    return `done in ${run} runs`;
  },
});

let tasks: RunningServer;
let plain: RunningServer;
beforeAll(async () => {
  // Every progress kept (not 4 a second), so the order of the notifications can be checked step by step.
  tasks = await listen(createServer({ tools: [steps, flaky], logger: false, progressPerSecond: 1000 }), { port: 0 });
  plain = await listen(createServer({ tools: [steps, flaky], logger: false, extensions: false }), { port: 0 });
});
afterAll(async () => {
  await tasks.close();
  await plain.close();
});

/**
 * An SDK client connected in-process to a bridge for `url`; `requests` lists what the bridge asked the OXP server,
 * `progress` the notifications the client got. They, and what the bridge reads of event streams, are what
 * {@link when} looks at from then on.
 */
async function bridged(url: string) {
  const requests: string[] = [];
  const progress: ProgressNotification["params"][] = [];
  const streamed: string[] = [];
  const waiting = new Set<() => void>();
  seen = { progress, requests, streamed, waiting };
  const changed = () => {
    for (const look of [...waiting]) {
      look();
    }
  };
  const observed: typeof fetch = async (input, init) => {
    const request = new Request(input, init);
    const prefer = request.headers.get("prefer");
    const extensions = request.headers.get("oxp-extensions");
    requests.push(
      `${request.method} ${new URL(request.url).pathname}${extensions ? ` [${extensions}]` : ""}${prefer ? ` (${prefer})` : ""}`,
    );
    changed();
    const response = await fetch(request);
    if (!response.body || !new URL(request.url).pathname.endsWith("/events")) {
      return response;
    }
    // An event stream, each piece kept as the bridge reads it (pulled, not before: no read ahead).
    const reader = response.body.getReader();
    const decoder = new TextDecoder();
    const body = new ReadableStream<Uint8Array>(
      {
        async pull(controller) {
          const { done, value } = await reader.read();
          if (done) {
            controller.close();
            return;
          }
          controller.enqueue(value);
          streamed.push(decoder.decode(value, { stream: true }));
          changed();
        },
        cancel: (reason) => reader.cancel(reason),
      },
      { highWaterMark: 0 },
    );
    return new Response(body, { status: response.status, statusText: response.statusText, headers: response.headers });
  };
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  await createMcpBridge({ url, fetch: observed }).createServer().connect(serverSide);
  const client = new Client({ name: "progress-test", version: "1.0.0" });
  // In place of the SDK's own handler (which knows only the tokens it made): every notification is kept.
  client.setNotificationHandler(ProgressNotificationSchema, (notification) => {
    progress.push(notification.params);
    changed();
  });
  await client.connect(clientSide);
  // Listed once here, so that the requests of the call are all that `requests` holds after a reset.
  await client.listTools();
  requests.length = 0;
  return { client, requests, progress };
}

/** The run of the call the tool starts next; rejects if `call` ends first. Asked for before the call is made. */
function startedBy(call: () => Promise<unknown>): { call: Promise<unknown>; run: Promise<Run> } {
  const started = new Promise<Run>((resolve) => {
    onRun = resolve;
  });
  const made = call();
  made.catch(() => undefined);
  const ended = made.then(() => Promise.reject(new Error("the call ended before the tool started")));
  return { call: made, run: Promise.race([started, ended]) };
}

/**
 * The call's status on the tasks server once it has ended (the bridge's cancel is sent without waiting for it), read
 * with long polls (`Prefer: wait=30`), each answered as soon as the status changes: an event, not a delay. A call
 * still running after three of them is returned as it is, for the test's expectation to show.
 */
async function endedStatus(callId: string): Promise<CallStatus> {
  let status: CallStatus | undefined;
  for (let round = 0; round < 3 && (!status || status.status === "running"); round++) {
    const answer = await fetch(`${tasks.url}/tools/calls/${callId}`, {
      headers: { "OXP-Extensions": "tasks", Prefer: "wait=30" },
    });
    expect(answer.status).toBe(200);
    status = (await answer.json()) as CallStatus;
  }
  return status as CallStatus;
}

describe("a tools/call with a progress token, to a server that offers tasks", () => {
  it("is an asynchronous call whose progress comes as notifications/progress with the token, in order, then the result", async () => {
    const { client, requests, progress } = await bridged(tasks.url);
    try {
      const result = await client.callTool({
        name: "Work_Steps",
        arguments: { steps: 4, paced: true },
        _meta: { progressToken: "steps-1" },
      });
      expect(result).toEqual({ content: [{ type: "text", text: "4" }], structuredContent: { value: 4 } });

      // Paced, each step reported once the one before was got: every one is its own notification.
      expect(progress.map((params) => params.progress)).toEqual([1, 2, 3, 4]);
      expect(progress.at(-1)).toEqual({ progressToken: "steps-1", progress: 4, total: 4, message: "Step 4 of 4" });
      for (const [index, params] of progress.entries()) {
        expect(params).toEqual({
          progressToken: "steps-1",
          progress: params.progress,
          total: 4,
          message: `Step ${params.progress} of 4`,
        });
        expect(params.progress).toBeGreaterThan(progress[index - 1]?.progress ?? 0);
      }
      // Accepted at once (no wait), then followed on its event stream.
      expect(requests[0]).toBe("POST /tools/call [tasks] (respond-async)");
      expect(requests.slice(1)).toEqual([
        expect.stringMatching(/^GET \/tools\/calls\/[0-9a-f-]{36}\/events \[tasks\]$/),
      ]);
    } finally {
      await client.close();
    }
  });

  it("retries a retryable failure as a plain call does, its progress only moving on", async () => {
    const { client, requests, progress } = await bridged(tasks.url);
    try {
      const result = await client.callTool({
        name: "Work_Flaky",
        arguments: { key: "progress-1" },
        _meta: { progressToken: "flaky-1" },
      });
      expect(result.structuredContent).toEqual({ value: "done in 2 runs" });
      expect(requests.filter((request) => request.startsWith("POST"))).toHaveLength(2);
      // The second run starts its progress over; MCP wants each notification further on, so 1 to 3 are not sent again.
      const values = progress.map((params) => params.progress);
      expect(values).toEqual([...values].sort((a, b) => a - b));
      expect(new Set(values).size).toBe(values.length);
      expect(progress.at(-1)).toEqual({ progressToken: "flaky-1", progress: 5, total: 5, message: "Run 2, step 5" });
    } finally {
      await client.close();
    }
  });

  it("takes a numeric token too", async () => {
    const { client, progress } = await bridged(tasks.url);
    try {
      await client.callTool({ name: "Work_Steps", arguments: { steps: 2, paced: true }, _meta: { progressToken: 7 } });
      expect(progress.length).toBeGreaterThanOrEqual(1);
      expect(progress.every((params) => params.progressToken === 7)).toBe(true);
    } finally {
      await client.close();
    }
  });

  it("cancelled: the OXP call is DELETEd, the tool's signal fires and the call ends cancelled", async () => {
    const { client, requests, progress } = await bridged(tasks.url);
    try {
      const controller = new AbortController();
      // One step, then it runs until cancelled: nothing but the cancel ends it.
      const { call, run: started } = startedBy(() =>
        client.callTool(
          { name: "Work_Steps", arguments: { steps: 1, hold: true }, _meta: { progressToken: "steps-2" } },
          undefined,
          { signal: controller.signal },
        ),
      );
      const run = await started;
      await notified(1);
      expect(progress[0]).toMatchObject({ progressToken: "steps-2", progress: 1 });
      controller.abort(new Error("The user pressed stop"));
      await expect(call).rejects.toThrow(/pressed stop/);

      // The call is kept as cancelled, and the tool is told (the server's cancel reason).
      expect(await endedStatus(run.callId)).toMatchObject({
        call_id: run.callId,
        status: "cancelled",
        result: { success: false, error: { can_retry: false } },
      });
      expect(String(await run.aborted)).toMatch(/cancel/i);
      expect(requests).toContain(`DELETE /tools/calls/${run.callId} [tasks]`);
    } finally {
      await client.close();
    }
  });

  it("answers errors as plain calls do: a 422, a tool failure", async () => {
    const { client } = await bridged(tasks.url);
    try {
      const invalid = await client.callTool({
        name: "Work_Steps",
        arguments: { steps: 0 },
        _meta: { progressToken: "bad" },
      });
      expect(invalid.isError).toBe(true);
      expect(invalid._meta?.[ERROR_META_KEY]).toMatchObject({ status: 422, can_retry: false });
      const plainInvalid = await client.callTool({ name: "Work_Steps", arguments: { steps: 0 } });
      expect(plainInvalid).toEqual(invalid);

      // The failure comes from the event stream (paced, the call runs until the bridge got its progress there), and
      // reads as the one answered to the POST.
      const failed = await client.callTool({
        name: "Work_Steps",
        arguments: { steps: 2, paced: true, fail: true },
        _meta: { progressToken: "fails" },
      });
      const plainFailed = await client.callTool({ name: "Work_Steps", arguments: { steps: 2, fail: true } });
      expect(failed).toEqual({
        isError: true,
        content: [{ type: "text", text: "The work could not be finished.\n\nTry fewer steps." }],
        _meta: { [ERROR_META_KEY]: { call_id: expect.stringMatching(/^[0-9a-f-]{36}$/), can_retry: false } },
      });
      // Another call, another call_id: all else the same.
      const hints = failed._meta?.[ERROR_META_KEY] as Record<string, unknown>;
      expect(plainFailed).toEqual({
        ...failed,
        _meta: { [ERROR_META_KEY]: { ...hints, call_id: expect.any(String) } },
      });
    } finally {
      await client.close();
    }
  });
});

describe("a tools/call without a progress token, to a server that offers tasks", () => {
  it("is a synchronous call: one plain POST, answered in full; no notifications", async () => {
    const { client, requests, progress } = await bridged(tasks.url);
    try {
      const result = await client.callTool({ name: "Work_Steps", arguments: { steps: 2 } });
      expect(result).toEqual({ content: [{ type: "text", text: "2" }], structuredContent: { value: 2 } });
      // Not a task: no `Prefer: respond-async` (and no tasks extension asked for), as a direct OXP client calls.
      expect(requests).toEqual(["POST /tools/call"]);
      expect(progress).toEqual([]);
    } finally {
      await client.close();
    }
  });

  it("cancelled while it runs: the synchronous call is DELETEd by its call_id, and the tool's signal fires", async () => {
    const { client, requests } = await bridged(tasks.url);
    try {
      const controller = new AbortController();
      const { call, run: started } = startedBy(() =>
        client.callTool({ name: "Work_Steps", arguments: { steps: 1, hold: true } }, undefined, {
          signal: controller.signal,
        }),
      );
      const run = await started;
      controller.abort(new Error("Never mind"));
      await expect(call).rejects.toThrow(/Never mind/);
      // The tool is told on the OXP server (its signal, the server's cancel reason), and the call is kept as cancelled.
      expect(String(await run.aborted)).toMatch(/cancel/i);
      expect(await endedStatus(run.callId)).toMatchObject({ status: "cancelled" });
      expect(requests).toEqual(["POST /tools/call", `DELETE /tools/calls/${run.callId} [tasks]`]);
    } finally {
      await client.close();
    }
  });
});

describe("a tools/call without a progress token over 2026-07-28 streamable HTTP", () => {
  it("is synchronous, and the client aborting it stops the tool on the OXP server", async () => {
    const requests: string[] = [];
    const observed: typeof fetch = (input, init) => {
      const request = new Request(input, init);
      requests.push(
        `${request.method} ${new URL(request.url).pathname}${request.headers.has("prefer") ? " (prefer)" : ""}`,
      );
      return fetch(request);
    };
    const http = await serveHttp(createMcpBridge({ url: tasks.url, fetch: observed }));
    const client = new V2Client(
      { name: "progress-test-v2", version: "1.0.0" },
      { versionNegotiation: { mode: "auto" } },
    );
    try {
      await client.connect(new V2HttpTransport(new URL(http.url)));
      await client.listTools();
      requests.length = 0;
      const controller = new AbortController();
      const { call, run: started } = startedBy(() =>
        client.callTool({ name: "Work_Steps", arguments: { steps: 1, hold: true } }, { signal: controller.signal }),
      );
      const run = await started;
      controller.abort(new Error("The user pressed stop"));
      await expect(call).rejects.toThrow(/pressed stop/);
      // The call's stream closing aborts the request's handler: the tool's signal fires on the OXP server.
      expect(String(await run.aborted)).toMatch(/cancel/i);
      expect(await endedStatus(run.callId)).toMatchObject({ status: "cancelled" });
      expect(requests).toEqual(["POST /tools/call", `DELETE /tools/calls/${run.callId}`]);
    } finally {
      await client.close();
      await http.close();
    }
  });
});

describe("an OXP 1.0 server (no tasks)", () => {
  it("is called as before, token or not: one plain POST, no notifications", async () => {
    const { client, requests, progress } = await bridged(plain.url);
    try {
      const result = await client.callTool({
        name: "Work_Steps",
        arguments: { steps: 3 },
        _meta: { progressToken: "steps-3" },
      });
      expect(result).toEqual({ content: [{ type: "text", text: "3" }], structuredContent: { value: 3 } });
      await client.callTool({ name: "Work_Steps", arguments: { steps: 1 } });
      expect(requests).toEqual(["POST /tools/call", "POST /tools/call"]);
      expect(progress).toEqual([]);
    } finally {
      await client.close();
    }
  });
});
