// The bridge's tools/call over the tasks extension: a progress token gets notifications/progress, a cancelled request DELETEs the OXP call, and an OXP 1.0 server is called as before.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js";
import { type ProgressNotification, ProgressNotificationSchema } from "@modelcontextprotocol/sdk/types.js";
import { createServer, defineTool, listen, OxpToolError, type RunningServer } from "@otc/server";
import type { CallStatus } from "@otc/types";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createMcpBridge, ERROR_META_KEY } from "../src/bridge.js";

/** What the tool saw of each call, by call_id: when it started, and the reason its signal fired with. */
const runs = new Map<string, { aborted: Promise<unknown> }>();

/** Waits `ms`, or rejects with the signal's reason once it fires. */
function pause(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal.reason);
    };
    const timer = setTimeout(() => {
      signal.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    signal.addEventListener("abort", onAbort, { once: true });
  });
}

const steps = defineTool({
  toolkit: "Work",
  name: "Steps",
  version: "1.0.0",
  description: "Does `steps` steps of `ms` each, reporting each as it starts; stops when its signal fires.",
  inputSchema: {
    type: "object",
    properties: {
      steps: { type: "integer", minimum: 1, description: "How many steps." },
      ms: { type: "integer", minimum: 0, description: "How long each step takes, in ms." },
      fail: { type: "boolean", description: "Fail after the steps." },
    },
    required: ["steps", "ms"],
  },
  outputSchema: { type: "integer" },
  run: async ({ steps: count, ms, fail }, { callId, progress, signal }) => {
    runs.set(callId, {
      aborted: new Promise((resolve) => signal.addEventListener("abort", () => resolve(signal.reason), { once: true })),
    });
    for (let step = 1; step <= count; step++) {
      progress({ progress: step, total: count, message: `Step ${step} of ${count}` });
      await pause(ms, signal);
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
  description: "Reports five steps; the first run of each `key` fails after three, and may be retried.",
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
      await pause(30, signal);
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

/** An SDK client connected in-process to a bridge for `url`; `requests` lists what the bridge asked the OXP server. */
async function bridged(url: string) {
  const requests: string[] = [];
  const observed: typeof fetch = (input, init) => {
    const request = new Request(input, init);
    const prefer = request.headers.get("prefer");
    const extensions = request.headers.get("oxp-extensions");
    requests.push(
      `${request.method} ${new URL(request.url).pathname}${extensions ? ` [${extensions}]` : ""}${prefer ? ` (${prefer})` : ""}`,
    );
    return fetch(request);
  };
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  await createMcpBridge({ url, fetch: observed }).createServer().connect(serverSide);
  const client = new Client({ name: "progress-test", version: "1.0.0" });
  const progress: ProgressNotification["params"][] = [];
  // In place of the SDK's own handler (which knows only the tokens it made): every notification is kept.
  client.setNotificationHandler(ProgressNotificationSchema, (notification) => {
    progress.push(notification.params);
  });
  await client.connect(clientSide);
  // Listed once here, so that the requests of the call are all that `requests` holds after a reset.
  await client.listTools();
  requests.length = 0;
  return { client, requests, progress };
}

/** The run of the latest call the tool saw. */
async function latestRun(): Promise<{ callId: string; aborted: Promise<unknown> }> {
  for (let waited = 0; waited < 5_000; waited += 10) {
    const last = [...runs].at(-1);
    if (last) {
      return { callId: last[0], aborted: last[1].aborted };
    }
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  throw new Error("the tool did not start");
}

/** GET /tools/calls/{call_id} on the tasks server, until the call has ended (the cancel is sent without waiting). */
async function endedStatus(callId: string): Promise<CallStatus> {
  for (let waited = 0; ; waited += 20) {
    const answer = await fetch(`${tasks.url}/tools/calls/${callId}`, { headers: { "OXP-Extensions": "tasks" } });
    expect(answer.status).toBe(200);
    const status = (await answer.json()) as CallStatus;
    if (status.status !== "running" || waited > 5_000) {
      return status;
    }
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

describe("a tools/call with a progress token, to a server that offers tasks", () => {
  it("is an asynchronous call whose progress comes as notifications/progress with the token, in order, then the result", async () => {
    const { client, requests, progress } = await bridged(tasks.url);
    try {
      const result = await client.callTool({
        name: "Work_Steps",
        arguments: { steps: 4, ms: 60 },
        _meta: { progressToken: "steps-1" },
      });
      expect(result).toEqual({ content: [{ type: "text", text: "4" }], structuredContent: { value: 4 } });

      expect(progress.length).toBeGreaterThanOrEqual(2);
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
      await client.callTool({ name: "Work_Steps", arguments: { steps: 2, ms: 30 }, _meta: { progressToken: 7 } });
      expect(progress.length).toBeGreaterThanOrEqual(1);
      expect(progress.every((params) => params.progressToken === 7)).toBe(true);
    } finally {
      await client.close();
    }
  });

  it("cancelled: the OXP call is DELETEd, the tool's signal fires and the call ends cancelled", async () => {
    runs.clear();
    const { client, requests, progress } = await bridged(tasks.url);
    try {
      const controller = new AbortController();
      const call = client.callTool(
        { name: "Work_Steps", arguments: { steps: 100, ms: 50 }, _meta: { progressToken: "steps-2" } },
        undefined,
        { signal: controller.signal },
      );
      call.catch(() => undefined);
      const run = await latestRun();
      for (let waited = 0; progress.length === 0 && waited < 5_000; waited += 10) {
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
      expect(progress[0]).toMatchObject({ progressToken: "steps-2", progress: 1 });
      controller.abort(new Error("The user pressed stop"));
      await expect(call).rejects.toThrow(/pressed stop/);

      // The tool is told (the server's cancel reason), and the call is kept as cancelled.
      expect(String(await run.aborted)).toMatch(/cancel/i);
      expect(await endedStatus(run.callId)).toMatchObject({
        call_id: run.callId,
        status: "cancelled",
        result: { success: false, error: { can_retry: false } },
      });
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
        arguments: { steps: 0, ms: 1 },
        _meta: { progressToken: "bad" },
      });
      expect(invalid.isError).toBe(true);
      expect(invalid._meta?.[ERROR_META_KEY]).toMatchObject({ status: 422, can_retry: false });
      const plainInvalid = await client.callTool({ name: "Work_Steps", arguments: { steps: 0, ms: 1 } });
      expect(plainInvalid).toEqual(invalid);

      // The failure comes from the event stream, and reads as the one answered to the POST.
      const failed = await client.callTool({
        name: "Work_Steps",
        arguments: { steps: 2, ms: 10, fail: true },
        _meta: { progressToken: "fails" },
      });
      const plainFailed = await client.callTool({ name: "Work_Steps", arguments: { steps: 2, ms: 10, fail: true } });
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
  it("ends in its own request when quick: one POST, answered in full; no notifications", async () => {
    const { client, requests, progress } = await bridged(tasks.url);
    try {
      const result = await client.callTool({ name: "Work_Steps", arguments: { steps: 2, ms: 10 } });
      expect(result).toEqual({ content: [{ type: "text", text: "2" }], structuredContent: { value: 2 } });
      expect(requests).toEqual(["POST /tools/call [tasks] (respond-async, wait=30)"]);
      expect(progress).toEqual([]);
    } finally {
      await client.close();
    }
  });

  it("cancelled while the server holds its answer: DELETEd all the same", async () => {
    runs.clear();
    const { client, requests } = await bridged(tasks.url);
    try {
      const controller = new AbortController();
      const call = client.callTool({ name: "Work_Steps", arguments: { steps: 100, ms: 50 } }, undefined, {
        signal: controller.signal,
      });
      call.catch(() => undefined);
      const run = await latestRun();
      controller.abort(new Error("Never mind"));
      await expect(call).rejects.toThrow(/Never mind/);
      expect(String(await run.aborted)).toMatch(/cancel/i);
      expect(await endedStatus(run.callId)).toMatchObject({ status: "cancelled" });
      expect(requests).toContain(`DELETE /tools/calls/${run.callId} [tasks]`);
    } finally {
      await client.close();
    }
  });
});

describe("an OXP 1.0 server (no tasks)", () => {
  it("is called as before, token or not: one plain POST, no notifications", async () => {
    const { client, requests, progress } = await bridged(plain.url);
    try {
      const result = await client.callTool({
        name: "Work_Steps",
        arguments: { steps: 3, ms: 20 },
        _meta: { progressToken: "steps-3" },
      });
      expect(result).toEqual({ content: [{ type: "text", text: "3" }], structuredContent: { value: 3 } });
      await client.callTool({ name: "Work_Steps", arguments: { steps: 1, ms: 1 } });
      expect(requests).toEqual(["POST /tools/call", "POST /tools/call"]);
      expect(progress).toEqual([]);
    } finally {
      await client.close();
    }
  });
});
