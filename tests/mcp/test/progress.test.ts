// Progress and cancellation through the bridge, driven by the official MCP clients (v1 in 2025, v2 in 2026-07-28) over
// stdio (`otc mcp serve`) and streamable HTTP: a server built here whose tool reports each step once the client got
// the one before, and shows when its signal fires; the demo for the authorization challenge.
import type { Client as V2Client } from "@modelcontextprotocol/client";
import type { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { type ProgressNotification, ProgressNotificationSchema } from "@modelcontextprotocol/sdk/types.js";
import { AUTHORIZATION_META_KEY, createMcpBridge, type HttpBridge, serveHttp } from "@otc/mcp";
import { createServer, defineTool, listen, type RunningServer } from "@otc/server";
import { until } from "@otc/test-helpers/until";
import type { CallStatus } from "@otc/types";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  API_KEY,
  approve,
  connectHttp,
  connectHttpV2,
  connectStdio,
  connectStdioV2,
  type Demo,
  MODERN_REVISION,
  mcpClient,
  mcpClientV2,
  polled,
  startDemo,
  textOf,
} from "./harness.js";

/**
 * The progress notifications a test's client got, in order: a paced run of Work.Steps waits on them, and so does the
 * test. Waiting on them is waiting on an event, however slow the machine (or the bridge's child process).
 */
class Notifications<T> {
  readonly got: T[] = [];
  readonly #waiting = new Set<() => void>();

  push(notification: T): void {
    this.got.push(notification);
    for (const look of [...this.#waiting]) {
      look();
    }
  }

  /** Resolves once `count` have come; rejects with `signal`'s reason when it fires first. */
  until(count: number, signal?: AbortSignal): Promise<void> {
    return new Promise((resolve, reject) => {
      const stop = () => {
        this.#waiting.delete(look);
        signal?.removeEventListener("abort", onAbort);
      };
      const look = () => {
        if (this.got.length >= count) {
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
      this.#waiting.add(look);
      signal?.addEventListener("abort", onAbort, { once: true });
      look();
    });
  }
}

/** The notifications of the client made last ({@link notifications}): the ones Work.Steps paces itself on. */
let latest = new Notifications<unknown>();

/** A new record of progress notifications, for the client a test makes next. */
function notifications<T>(): Notifications<T> {
  const made = new Notifications<T>();
  latest = made;
  return made;
}

/** A call the tool started: its call_id, and the reason its signal fired with, once it has. */
interface Run {
  callId: string;
  aborted: Promise<unknown>;
}

/** Told of the next call the tool starts (see {@link startedBy}). */
let onRun: ((run: Run) => void) | undefined;

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
    "Reports `steps` steps; `paced`, each once the client got the one before; `hold`, then runs until its signal fires.",
  inputSchema: {
    type: "object",
    properties: {
      steps: { type: "integer", minimum: 1, description: "How many steps." },
      paced: {
        type: "boolean",
        description: "Report a step only once the MCP client got the one before (a progress token is needed).",
      },
      hold: { type: "boolean", description: "After the steps, run on until the signal fires." },
    },
    required: ["steps"],
  },
  outputSchema: { type: "integer" },
  run: async ({ steps: count, paced, hold }, { callId, progress, signal }) => {
    const aborted = new Promise((resolve) => signal.addEventListener("abort", () => resolve(signal.reason)));
    onRun?.({ callId, aborted });
    const got = latest;
    for (let step = 1; step <= count; step++) {
      progress({ progress: step, total: count, message: `Step ${step} of ${count}` });
      // Paced: every step is its own notification, in whatever time the machine takes, instead of a step per N ms.
      if (paced) {
        await got.until(step, signal);
      }
    }
    if (hold) {
      await untilAborted(signal);
    }
    return count;
  },
});

let demo: Demo;
let work: RunningServer;
let plain: RunningServer;
beforeAll(async () => {
  demo = await startDemo();
  // Every progress kept at once (not 4 a second): a paced step need not wait for the server's next interval.
  const options = { tools: [steps], auth: { apiKeys: [API_KEY] }, logger: false as const, validateResponses: true };
  work = await listen(createServer({ ...options, progressPerSecond: 1000 }), { port: 0 });
  plain = await listen(createServer({ ...options, extensions: false }), { port: 0 });
});
afterAll(async () => {
  await Promise.all([demo.close(), work.close(), plain.close()]);
});

/** An SDK client that keeps every progress notification it gets, whatever its token (the SDK's own handler knows only the tokens it made). */
function progressClient(onElicit?: Parameters<typeof mcpClient>[0]) {
  const client = mcpClient(onElicit);
  const progress = notifications<ProgressNotification["params"]>();
  client.setNotificationHandler(ProgressNotificationSchema, (notification) => {
    progress.push(notification.params);
  });
  return { client, progress };
}

/** The run of the call the tool starts next; rejects if `call` ends first. Asked for before the call is made. */
function startedBy<T>(call: () => Promise<T>): { call: Promise<T>; run: Promise<Run> } {
  const started = new Promise<Run>((resolve) => {
    onRun = resolve;
  });
  const made = call();
  made.catch(() => undefined);
  const ended = made.then(() => Promise.reject(new Error("the call ended before the tool started")));
  return { call: made, run: Promise.race([started, ended]) };
}

/** GET /tools/calls/{call_id} on the work server, with the bridge's credentials: the call's status now. */
async function statusOf(callId: string, prefer?: string): Promise<CallStatus> {
  const answer = await fetch(`${work.url}/tools/calls/${callId}`, {
    headers: { "OXP-API-Key": API_KEY, "OXP-Extensions": "tasks", ...(prefer ? { Prefer: prefer } : {}) },
  });
  expect(answer.status).toBe(200);
  return (await answer.json()) as CallStatus;
}

/**
 * The call's status once it has ended (the bridge's cancel is sent without waiting for it), read with long polls
 * (`Prefer: wait=30`), each answered as soon as the status changes: an event, not a delay. A call still running
 * after three of them is returned as it is, for the test's expectation to show.
 */
async function endedStatus(callId: string): Promise<CallStatus> {
  let status = await statusOf(callId, "wait=30");
  for (let round = 1; round < 3 && status.status === "running"; round++) {
    status = await statusOf(callId, "wait=30");
  }
  return status;
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
  it("a tool's progress comes as notifications/progress with the request's token, in order, before the result", async () => {
    const { client, progress } = progressClient();
    await connect(client, work.url);
    try {
      const result = await client.callTool({
        name: "Work_Steps",
        arguments: { steps: 4, paced: true },
        _meta: { progressToken: "steps-1" },
      });
      expect(result.structuredContent).toEqual({ value: 4 });
      // Paced, each step reported once the one before was got: every one is its own notification, in order.
      expect(progress.got).toEqual(
        [1, 2, 3, 4].map((step) => ({
          progressToken: "steps-1",
          progress: step,
          total: 4,
          message: `Step ${step} of 4`,
        })),
      );
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
        arguments: { steps: 3 },
        _meta: { progressToken: "plain-1" },
      });
      const without = await client.callTool({ name: "Work_Steps", arguments: { steps: 3 } });
      expect(withToken).toEqual({ content: [{ type: "text", text: "3" }], structuredContent: { value: 3 } });
      expect(without).toEqual(withToken);
      expect(progress.got).toEqual([]);
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

type Update = { progress: number; total?: number | undefined; message?: string | undefined };

describe.each(v2Transports)("a v2 client (2026-07-28) over %s", (_name, connect) => {
  it("gets a tool's progress through onprogress, in order, before the result", async () => {
    const client = mcpClientV2();
    await connect(client, work.url);
    try {
      expect(client.getNegotiatedProtocolVersion()).toBe(MODERN_REVISION);
      const progress = notifications<Update>();
      const result = await client.callTool(
        { name: "Work_Steps", arguments: { steps: 4, paced: true } },
        { onprogress: (update) => progress.push(update) },
      );
      expect(result.structuredContent).toEqual({ value: 4 });
      expect(progress.got).toEqual(
        [1, 2, 3, 4].map((step) => ({ progress: step, total: 4, message: `Step ${step} of 4` })),
      );
    } finally {
      await client.close();
    }
  });

  it("aborting the call cancels the OXP call, and the tool's signal fires", async () => {
    const client = mcpClientV2();
    await connect(client, work.url);
    try {
      const controller = new AbortController();
      const progress = notifications<Update>();
      // One step, then it runs until cancelled: nothing but the cancel ends it.
      const { call, run: started } = startedBy(() =>
        client.callTool(
          { name: "Work_Steps", arguments: { steps: 1, hold: true } },
          { signal: controller.signal, onprogress: (update) => progress.push(update) },
        ),
      );
      const run = await started;
      await progress.until(1);
      controller.abort(new Error("The user pressed stop"));
      await expect(call).rejects.toThrow(/pressed stop/);
      // Over 2026-07-28 HTTP the cancel is the call's stream closing, which reaches the call (2025's POST did not).
      expect(await endedStatus(run.callId)).toMatchObject({ call_id: run.callId, status: "cancelled" });
      expect(String(await run.aborted)).toMatch(/cancel/i);
      const next = await client.callTool({ name: "Work_Steps", arguments: { steps: 1 } });
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
    const { client, progress } = progressClient();
    await connectStdio(client, work.url);
    try {
      const controller = new AbortController();
      // Two steps (paced, with a token), then it runs until cancelled: nothing but the cancel ends it.
      const { call, run: started } = startedBy(() =>
        client.callTool(
          {
            name: "Work_Steps",
            arguments: { steps: 2, paced: meta !== undefined, hold: true },
            ...(meta ? { _meta: meta } : {}),
          },
          undefined,
          { signal: controller.signal },
        ),
      );
      const run = await started;
      if (meta) {
        await progress.until(2);
        const [first, second] = progress.got;
        expect(first).toMatchObject({ progressToken: "stop-1", progress: 1, total: 2 });
        expect(second).toMatchObject({ progressToken: "stop-1", total: 2 });
        expect(second?.progress).toBeGreaterThan(1);
      }
      controller.abort(new Error("The user pressed stop"));
      await expect(call).rejects.toThrow(/pressed stop/);

      expect(await endedStatus(run.callId)).toMatchObject({
        call_id: run.callId,
        status: "cancelled",
        result: { success: false, error: { can_retry: false } },
      });
      expect(String(await run.aborted)).toMatch(/cancel/i);
      // The bridge goes on serving.
      expect((await client.callTool({ name: "Work_Steps", arguments: { steps: 1 } })).structuredContent).toEqual({
        value: 1,
      });
    } finally {
      await client.close();
    }
  });
});

describe("cancelling over streamable HTTP (stateless)", () => {
  it("a cancel in a request of its own cannot reach the call; the client going away cancels it", async () => {
    const { client, progress } = progressClient();
    // What the bridge asks the OXP server, and the JSON-RPC methods the client posts once answered.
    const asked: string[] = [];
    const bridge = await serveHttp(
      createMcpBridge({
        url: work.url,
        apiKey: API_KEY,
        fetch: (input, init) => {
          const request = new Request(input, init);
          asked.push(`${request.method} ${new URL(request.url).pathname}`);
          return fetch(request);
        },
      }),
    );
    http.push(bridge);
    const answered: string[] = [];
    await connectHttp(client, bridge.url, {}, async (input, init) => {
      const response = await fetch(input, init);
      answered.push(
        typeof init?.body === "string" ? ((JSON.parse(init.body) as { method?: string }).method ?? "") : "",
      );
      return response;
    });
    const controller = new AbortController();
    const { call, run: started } = startedBy(() =>
      client.callTool(
        { name: "Work_Steps", arguments: { steps: 1, hold: true }, _meta: { progressToken: "http-1" } },
        undefined,
        { signal: controller.signal },
      ),
    );
    const run = await started;
    await progress.until(1);
    let aborted = false;
    void run.aborted.then(() => {
      aborted = true;
    });
    controller.abort(new Error("The user pressed stop"));
    await expect(call).rejects.toThrow(/pressed stop/);
    // The notifications/cancelled POST reaches a server of its own, which knows no such request (README): once the
    // bridge has answered it, and a request after it, the call runs on and the bridge sent no DELETE.
    await until(() => answered.includes("notifications/cancelled"), { what: "the bridge to answer the cancel" });
    await client.listTools();
    expect(aborted).toBe(false);
    expect(asked.filter((request) => request.startsWith("DELETE"))).toEqual([]);
    expect(await statusOf(run.callId)).toMatchObject({ status: "running" });

    // Closing the client ends the call's response stream: the bridge cancels the OXP call.
    await client.close();
    expect(await endedStatus(run.callId)).toMatchObject({ status: "cancelled" });
    expect(String(await run.aborted)).toMatch(/cancel/i);
  });
});

describe("the authorization challenge, with a progress token", () => {
  it("over stdio: elicited, approved, and the call retried to its result as without one", async () => {
    const elicited: string[] = [];
    let approved: Promise<void> | undefined;
    const { client } = progressClient(async (request) => {
      const { url } = request.params as { url: string };
      elicited.push(url);
      // The user approves once the bridge polls the challenge (after this answer), still pending then.
      approved = polled(demo, url).then(() => approve(url));
      return { action: "accept" };
    });
    await connectStdio(client, demo.url, ["--user-id", "pat"]);
    try {
      const result = await client.callTool({
        name: "Gmail_GetEmails",
        arguments: { query: "receipt" },
        _meta: { progressToken: "mail-1" },
      });
      await approved;
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
