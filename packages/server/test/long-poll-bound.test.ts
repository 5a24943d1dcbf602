// docs/protocol.md 7 and 9.3 (issue 34, F8): one client's long polls of a call's status are bounded, as its event streams are; polls from several loopback addresses, on a clock that never moves, so a held poll stays held.
import { request as httpRequest } from "node:http";
import { ManualClock } from "@otc/test-helpers/manual-clock";
import { until } from "@otc/test-helpers/until";
import { verifies } from "@otc/test-helpers/verifies";
import { afterEach, describe, expect, it } from "vitest";
import { defineTool, listen, type RunningServer, type ServerOptions, type Tool } from "../src/index.js";
import { makeServer } from "./harness.js";
import { testTools } from "./tools.js";

const KEY_ONE = "poll-key-one-0123456789abcdef";
const KEY_TWO = "poll-key-two-0123456789abcdef";
const TASKS = { "OXP-Extensions": "tasks" };

/** A tool that runs until it is cancelled, reporting no progress: its status never changes by itself. */
const holder: Tool = defineTool({
  toolkit: "Hold",
  name: "Wait",
  version: "1.0.0",
  description: "Runs until it is cancelled.",
  inputSchema: { type: "object", properties: {}, additionalProperties: false },
  outputSchema: { type: "string" },
  run: (_input, { signal }) =>
    new Promise<string>((_resolve, reject) => {
      signal.addEventListener("abort", () => reject(signal.reason), { once: true });
    }),
}) as Tool;

const running: RunningServer[] = [];
const inFlight: AbortController[] = [];
afterEach(async () => {
  for (const controller of inFlight.splice(0)) {
    controller.abort();
  }
  await Promise.all(running.splice(0).map((server) => server.close()));
});

async function serve(options: Partial<ServerOptions>) {
  const clock = new ManualClock();
  const server = await listen(makeServer({ tools: [...testTools(), holder], logger: false, clock, ...options }), {
    port: 0,
  });
  running.push(server);
  return { url: server.url, clock };
}

interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

/** A request from a chosen loopback address on a connection of its own; `controller` hangs it up. */
function request(
  url: string,
  {
    from,
    method = "GET",
    headers = {},
    body,
  }: { from: string; method?: string; headers?: Record<string, string>; body?: unknown },
): { answer: Promise<Answer>; controller: AbortController } {
  const controller = new AbortController();
  inFlight.push(controller);
  const payload = body === undefined ? undefined : JSON.stringify(body);
  const answer = new Promise<Answer>((resolve, reject) => {
    const req = httpRequest(
      url,
      {
        method,
        localAddress: from,
        agent: false,
        signal: controller.signal,
        headers: {
          ...headers,
          ...(payload === undefined
            ? {}
            : { "content-type": "application/json", "content-length": Buffer.byteLength(payload) }),
        },
      },
      (res) => {
        let text = "";
        res.setEncoding("utf8");
        res.on("data", (chunk: string) => {
          text += chunk;
        });
        res.once("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: text }));
        res.once("error", reject);
      },
    );
    req.once("error", reject);
    req.end(payload);
  });
  // A poll hung up on by the test rejects: that is its end, not a failure.
  answer.catch(() => {});
  return { answer, controller };
}

/** Starts Hold.Wait asynchronously under `callId` for the client `headers` name. */
async function startHeld(url: string, callId: string, headers: Record<string, string>) {
  const { answer } = request(`${url}/tools/call`, {
    from: "127.0.0.1",
    method: "POST",
    headers: { ...TASKS, ...headers, Prefer: "respond-async" },
    body: { tool_id: "Hold.Wait", call_id: callId, input: {} },
  });
  expect((await answer).status).toBe(202);
}

const poll = (url: string, callId: string, from: string, headers: Record<string, string>) =>
  request(`${url}/tools/calls/${callId}`, { from, headers: { ...TASKS, ...headers, Prefer: "wait=30" } });

describe("long polls of one client", () => {
  verifies(
    ["limits.connection-allowances", "tasks.long-poll"],
    "holds a principal's first N polls, from any address, and answers its N+1-th 429 with Retry-After",
    async () => {
      const { url, clock } = await serve({ auth: { apiKeys: [KEY_ONE, KEY_TWO] }, longPolls: { maxPerClient: 3 } });
      const one = { "OXP-API-Key": KEY_ONE };
      const two = { "OXP-API-Key": KEY_TWO };
      await startHeld(url, "mine", one);
      await startHeld(url, "theirs", two);
      // Each held poll waits on the clock: its timer tells the test it is held.
      const base = clock.pending;

      // The one principal polling from several addresses: they are one client.
      const held = ["127.0.0.2", "127.0.0.3", "127.0.0.4"].map((from) => poll(url, "mine", from, one));
      await clock.untilPending(base + 3);
      const refused = await poll(url, "mine", "127.0.0.5", one).answer;
      expect(refused.status, refused.body).toBe(429);
      expect(refused.headers["retry-after"]).toMatch(/^[1-9][0-9]*$/);
      expect(JSON.parse(refused.body)).toMatchObject({ message: "Too many of your long polls are waiting" });
      expect(clock.pending).toBe(base + 3);

      // Another principal has an allowance of its own.
      const theirs = poll(url, "theirs", "127.0.0.2", two);
      await clock.untilPending(base + 4);

      // A poll whose client hangs up frees its place.
      held[0]?.controller.abort();
      await until(() => clock.pending === base + 3, { what: "the hung-up poll to end" });
      const again = poll(url, "mine", "127.0.0.6", one);
      await clock.untilPending(base + 4);
      // The held polls are answered when their call changes: cancelled, here.
      const cancel = request(`${url}/tools/calls/mine`, {
        from: "127.0.0.1",
        method: "DELETE",
        headers: { ...TASKS, ...one },
      });
      expect((await cancel.answer).status).toBe(200);
      for (const answered of [held[1], held[2], again]) {
        const reply = await (answered as ReturnType<typeof poll>).answer;
        expect(reply.status).toBe(200);
        expect(JSON.parse(reply.body)).toMatchObject({ call_id: "mine", status: "cancelled" });
      }
      theirs.controller.abort();
    },
  );

  verifies(
    ["limits.connection-allowances", "tasks.long-poll"],
    "bounds anonymous polls by address: another address's poll is still held",
    async () => {
      const { url, clock } = await serve({ longPolls: { maxPerClient: 2 } });
      await startHeld(url, "anonymous-call", {});
      const base = clock.pending;
      poll(url, "anonymous-call", "127.0.0.2", {});
      poll(url, "anonymous-call", "127.0.0.2", {});
      await clock.untilPending(base + 2);
      expect((await poll(url, "anonymous-call", "127.0.0.2", {}).answer).status).toBe(429);
      poll(url, "anonymous-call", "127.0.0.3", {});
      await clock.untilPending(base + 3);
    },
  );

  it("refuses a bound that is not a positive integer", () => {
    expect(() => makeServer({ tools: testTools(), longPolls: { maxPerClient: 0 } })).toThrow(/longPolls.maxPerClient/);
  });
});
