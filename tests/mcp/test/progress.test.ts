// Progress and cancellation through the bridge, driven by the official MCP clients (v1 in 2025, v2 in 2026-07-28) over
// stdio (`otc mcp serve`) and streamable HTTP: the demo's System.Sleep, and a server built here whose tool shows when
// its signal fires.
import type { Client as V2Client } from "@modelcontextprotocol/client";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { type ProgressNotification, ProgressNotificationSchema } from "@modelcontextprotocol/sdk/types.js";
import { AUTHORIZATION_META_KEY, createMcpBridge, type HttpBridge, serveHttp } from "@otc/mcp";
import { createServer, defineTool, listen, type RunningServer } from "@otc/server";
import type { CallStatus } from "@otc/types";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  API_KEY,
  approve,
  connectHttp,
  connectHttpV2,
  connectStdio,
  connectStdioV2,
  MODERN_REVISION,
  mcpClient,
  mcpClientV2,
  startDemo,
  textOf,
} from "./harness.js";

/** The signal of each call the tool ran, by call_id, as a promise of the reason it fired with. */
const runs = new Map<string, Promise<unknown>>();

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
    },
    required: ["steps", "ms"],
  },
  outputSchema: { type: "integer" },
  run: async ({ steps: count, ms }, { callId, progress, signal }) => {
    runs.set(callId, new Promise((resolve) => signal.addEventListener("abort", () => resolve(signal.reason))));
    for (let step = 1; step <= count; step++) {
      progress({ progress: step, total: count, message: `Step ${step} of ${count}` });
      await pause(ms, signal);
    }
    return count;
  },
});

let demo: RunningServer;
let work: RunningServer;
let plain: RunningServer;
beforeAll(async () => {
  demo = await startDemo();
  const options = { tools: [steps], auth: { apiKeys: [API_KEY] }, logger: false as const, validateResponses: true };
  work = await listen(createServer(options), { port: 0 });
  plain = await listen(createServer({ ...options, extensions: false }), { port: 0 });
});
afterAll(async () => {
  await Promise.all([demo.close(), work.close(), plain.close()]);
});

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** An SDK client that keeps every progress notification it gets, whatever its token (the SDK's own handler knows only the tokens it made). */
function progressClient(onElicit?: Parameters<typeof mcpClient>[0]) {
  const client = mcpClient(onElicit);
  const progress: ProgressNotification["params"][] = [];
  client.setNotificationHandler(ProgressNotificationSchema, (notification) => {
    progress.push(notification.params);
  });
  return { client, progress };
}

/** The call the tool started last, once it has. */
async function latestRun(): Promise<{ callId: string; aborted: Promise<unknown> }> {
  for (let waited = 0; waited < 10_000; waited += 20) {
    const last = [...runs].at(-1);
    if (last) {
      return { callId: last[0], aborted: last[1] };
    }
    await sleep(20);
  }
  throw new Error("the tool did not start");
}

/** GET /tools/calls/{call_id} on the work server, with the bridge's credentials, until the call has ended. */
async function endedStatus(callId: string): Promise<CallStatus> {
  for (let waited = 0; ; waited += 50) {
    const answer = await fetch(`${work.url}/tools/calls/${callId}`, {
      headers: { "OXP-API-Key": API_KEY, "OXP-Extensions": "tasks" },
    });
    expect(answer.status).toBe(200);
    const status = (await answer.json()) as CallStatus;
    if (status.status !== "running" || waited > 10_000) {
      return status;
    }
    await sleep(50);
  }
}

/** Waits until `count` progress notifications have come. */
async function progressed(progress: readonly unknown[], count: number): Promise<void> {
  for (let waited = 0; progress.length < count; waited += 20) {
    if (waited > 10_000) {
      throw new Error(`${progress.length} progress notifications, not ${count}`);
    }
    await sleep(20);
  }
}

type Connect = (client: Client, url: string) => Promise<void>;

const http: HttpBridge[] = [];
afterAll(async () => {
  await Promise.all(http.map((bridge) => bridge.close()));
});

const transports: [string, Connect][] = [
  ["stdio", async (client, url) => void (await connectStdio(client, url))],
  [
    "streamable HTTP",
    async (client, url) => {
      const bridge = await serveHttp(createMcpBridge({ url, apiKey: API_KEY }));
      http.push(bridge);
      await connectHttp(client, bridge.url);
    },
  ],
];

describe.each(transports)("over %s", (_name, connect) => {
  it("System.Sleep's progress comes as notifications/progress with the request's token, in order, before the result", async () => {
    const { client, progress } = progressClient();
    await connect(client, demo.url);
    try {
      const result = await client.callTool({
        name: "System_Sleep",
        arguments: { ms: 900 },
        _meta: { progressToken: "sleep-1" },
      });
      expect(result.structuredContent).toEqual({ slept_ms: 900 });
      // The demo reports every 100 ms and keeps 4 a second: a few, each further on.
      expect(progress.length).toBeGreaterThanOrEqual(2);
      let last = 0;
      for (const params of progress) {
        expect(params).toEqual({
          progressToken: "sleep-1",
          progress: expect.any(Number),
          total: 900,
          message: `Slept ${params.progress} of 900 ms`,
        });
        expect(params.progress).toBeGreaterThan(last);
        last = params.progress;
      }
    } finally {
      await client.close();
    }
  });

  it("an OXP 1.0 server: the result as before, token or not, and no progress", async () => {
    const { client, progress } = progressClient();
    await connect(client, plain.url);
    try {
      const withToken = await client.callTool({
        name: "Work_Steps",
        arguments: { steps: 3, ms: 50 },
        _meta: { progressToken: "plain-1" },
      });
      const without = await client.callTool({ name: "Work_Steps", arguments: { steps: 3, ms: 50 } });
      expect(withToken).toEqual({ content: [{ type: "text", text: "3" }], structuredContent: { value: 3 } });
      expect(without).toEqual(withToken);
      expect(progress).toEqual([]);
    } finally {
      await client.close();
    }
  });
});

type ConnectV2 = (client: V2Client, url: string) => Promise<void>;

const v2Transports: [string, ConnectV2][] = [
  ["stdio", (client, url) => connectStdioV2(client, url)],
  [
    "streamable HTTP",
    async (client, url) => {
      const bridge = await serveHttp(createMcpBridge({ url, apiKey: API_KEY }));
      http.push(bridge);
      await connectHttpV2(client, bridge.url);
    },
  ],
];

describe.each(v2Transports)("a v2 client (2026-07-28) over %s", (_name, connect) => {
  it("gets System.Sleep's progress through onprogress, in order, before the result", async () => {
    const client = mcpClientV2();
    await connect(client, demo.url);
    try {
      expect(client.getNegotiatedProtocolVersion()).toBe(MODERN_REVISION);
      const progress: { progress: number; total?: number | undefined; message?: string | undefined }[] = [];
      const result = await client.callTool(
        { name: "System_Sleep", arguments: { ms: 900 } },
        { onprogress: (update) => void progress.push(update) },
      );
      expect(result.structuredContent).toEqual({ slept_ms: 900 });
      expect(progress.length).toBeGreaterThanOrEqual(2);
      let last = 0;
      for (const update of progress) {
        expect(update).toEqual({
          progress: expect.any(Number),
          total: 900,
          message: `Slept ${update.progress} of 900 ms`,
        });
        expect(update.progress).toBeGreaterThan(last);
        last = update.progress;
      }
    } finally {
      await client.close();
    }
  });

  it("aborting the call cancels the OXP call, and the tool's signal fires", async () => {
    runs.clear();
    const client = mcpClientV2();
    await connect(client, work.url);
    try {
      const controller = new AbortController();
      const progress: unknown[] = [];
      const call = client.callTool(
        { name: "Work_Steps", arguments: { steps: 200, ms: 50 } },
        { signal: controller.signal, onprogress: (update) => void progress.push(update) },
      );
      call.catch(() => undefined);
      const run = await latestRun();
      await progressed(progress, 1);
      controller.abort(new Error("The user pressed stop"));
      await expect(call).rejects.toThrow(/pressed stop/);
      // Over 2026-07-28 HTTP the cancel is the call's stream closing, which reaches the call (2025's POST did not).
      expect(String(await run.aborted)).toMatch(/cancel/i);
      expect(await endedStatus(run.callId)).toMatchObject({ call_id: run.callId, status: "cancelled" });
      const next = await client.callTool({ name: "Work_Steps", arguments: { steps: 1, ms: 1 } });
      expect(next.structuredContent).toEqual({ value: 1 });
    } finally {
      await client.close();
    }
  });
});

describe("cancelling over stdio (notifications/cancelled)", () => {
  it.each([
    ["with a progress token", { progressToken: "stop-1" }],
    ["without one", undefined],
  ])("%s: the OXP call is cancelled, and the tool's signal fires", async (_name, meta) => {
    runs.clear();
    const { client, progress } = progressClient();
    await connectStdio(client, work.url);
    try {
      const controller = new AbortController();
      const call = client.callTool(
        { name: "Work_Steps", arguments: { steps: 200, ms: 50 }, ...(meta ? { _meta: meta } : {}) },
        undefined,
        { signal: controller.signal },
      );
      call.catch(() => undefined);
      const run = await latestRun();
      if (meta) {
        await progressed(progress, 2);
        const [first, second] = progress;
        expect(first).toMatchObject({ progressToken: "stop-1", progress: 1, total: 200 });
        expect(second).toMatchObject({ progressToken: "stop-1", total: 200 });
        expect(second?.progress).toBeGreaterThan(1);
      }
      controller.abort(new Error("The user pressed stop"));
      await expect(call).rejects.toThrow(/pressed stop/);

      expect(String(await run.aborted)).toMatch(/cancel/i);
      expect(await endedStatus(run.callId)).toMatchObject({
        call_id: run.callId,
        status: "cancelled",
        result: { success: false, error: { can_retry: false } },
      });
      // The bridge goes on serving.
      expect((await client.callTool({ name: "Work_Steps", arguments: { steps: 1, ms: 1 } })).structuredContent).toEqual(
        {
          value: 1,
        },
      );
    } finally {
      await client.close();
    }
  });
});

describe("cancelling over streamable HTTP (stateless)", () => {
  it("a cancel in a request of its own cannot reach the call; the client going away cancels it", async () => {
    runs.clear();
    const { client, progress } = progressClient();
    const bridge = await serveHttp(createMcpBridge({ url: work.url, apiKey: API_KEY }));
    http.push(bridge);
    await connectHttp(client, bridge.url);
    const controller = new AbortController();
    const call = client.callTool(
      { name: "Work_Steps", arguments: { steps: 200, ms: 50 }, _meta: { progressToken: "http-1" } },
      undefined,
      { signal: controller.signal },
    );
    call.catch(() => undefined);
    const run = await latestRun();
    await progressed(progress, 1);
    controller.abort(new Error("The user pressed stop"));
    await expect(call).rejects.toThrow(/pressed stop/);
    // The notifications/cancelled POST reaches a server of its own, which knows no such request (README).
    const early = await Promise.race([run.aborted.then(() => "aborted"), sleep(500).then(() => "running")]);
    expect(early).toBe("running");

    // Closing the client ends the call's response stream: the bridge cancels the OXP call.
    await client.close();
    expect(String(await run.aborted)).toMatch(/cancel/i);
    expect(await endedStatus(run.callId)).toMatchObject({ status: "cancelled" });
  });
});

describe("the authorization challenge, with a progress token", () => {
  it("over stdio: elicited, approved, and the call retried to its result as without one", async () => {
    const elicited: string[] = [];
    const { client } = progressClient(async (request) => {
      const { url } = request.params as { url: string };
      elicited.push(url);
      setTimeout(() => void approve(url), 300);
      return { action: "accept" };
    });
    await connectStdio(client, demo.url, ["--user-id", "pat"]);
    try {
      const result = await client.callTool({
        name: "Gmail_GetEmails",
        arguments: { query: "receipt" },
        _meta: { progressToken: "mail-1" },
      });
      expect(elicited).toHaveLength(1);
      expect(result.isError).toBeFalsy();
      expect(result.structuredContent).toEqual({
        emails: [{ id: "email_2", subject: "Your Receipt", snippet: "Thank you for your purchase..." }],
      });
    } finally {
      await client.close();
    }
  });

  it("over streamable HTTP: the link, as without one", async () => {
    const { client } = progressClient();
    const bridge = await serveHttp(createMcpBridge({ url: demo.url, apiKey: API_KEY, userId: "quinn" }));
    http.push(bridge);
    await connectHttp(client, bridge.url);
    try {
      const result = await client.callTool({
        name: "Gmail_GetEmails",
        arguments: {},
        _meta: { progressToken: "mail-2" },
      });
      expect(result.isError).toBe(true);
      expect(textOf(result)).toMatch(/^The tool needs an authorization\. Ask the user to open this link/);
      expect(result._meta?.[AUTHORIZATION_META_KEY]).toEqual([
        { id: expect.any(String), url: expect.stringMatching(new RegExp(`^${demo.url}/demo/authorize/`)) },
      ]);
    } finally {
      await client.close();
    }
  });
});
