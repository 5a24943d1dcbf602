// Issue 20, findings 2 and 4 replayed against a real server: wide bodies, one client starving the rest, runs that outlive their connections.
import { request as httpRequest } from "node:http";
import { connect, type Socket } from "node:net";
import { verifies } from "@otc/test-helpers/verifies";
import { afterEach, describe, expect, it } from "vitest";
import { clientOf } from "../src/http/pipeline.js";
import { defineTool, listen, type RunningServer, type ServerOptions, type Tool } from "../src/index.js";
import { callTool, expectError, expectHealthy, makeServer, type Reply, startServer } from "./harness.js";
import { testTools } from "./tools.js";

/** A POST /tools/call sent from a chosen loopback address (the whole 127.0.0.0/8 reaches this machine). */
function callFrom(
  from: string,
  baseUrl: string,
  body: unknown,
  headers: Record<string, string> = {},
): Promise<Reply & { connection: string | undefined }> {
  const payload = Buffer.from(typeof body === "string" ? body : JSON.stringify(body));
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      `${baseUrl}/tools/call`,
      {
        method: "POST",
        localAddress: from,
        agent: false,
        headers: { "content-type": "application/json", "content-length": payload.length, ...headers },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on("data", (chunk: Buffer) => chunks.push(chunk));
        res.on("end", () => {
          const text = Buffer.concat(chunks).toString("utf8");
          const replyHeaders = new Headers();
          for (const [name, value] of Object.entries(res.headers)) {
            if (typeof value === "string") {
              replyHeaders.set(name, value);
            }
          }
          resolve({
            status: res.statusCode ?? 0,
            headers: replyHeaders,
            body: text ? JSON.parse(text) : undefined,
            text,
            connection: res.headers.connection,
          });
        });
      },
    );
    req.on("error", reject);
    req.end(payload);
  });
}

/** An input object with `count` keys besides `a` and `b`. */
function wideInput(count: number): Record<string, number> {
  const input: Record<string, number> = { a: 1, b: 2 };
  for (let i = 0; i < count; i++) {
    input[`k${i}`] = i;
  }
  return input;
}

const servers: RunningServer[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => server.close()));
});

/** A tool that waits until aborted (or `ms`), counting its runs and aborts. */
function waiter(counts: { started: number; aborted: number; finished: number }, ms = 10_000): Tool {
  return defineTool({
    toolkit: "Slow",
    name: "Wait",
    version: "1.0.0",
    description: "Waits, then answers; stops when aborted.",
    inputSchema: { type: "object", properties: {}, additionalProperties: false },
    outputSchema: { type: "string" },
    timeoutMs: 30_000,
    run: (_input, { signal }) => {
      counts.started++;
      return new Promise<string>((resolve, reject) => {
        const timer = setTimeout(() => {
          counts.finished++;
          resolve("done");
        }, ms);
        signal.addEventListener(
          "abort",
          () => {
            clearTimeout(timer);
            counts.aborted++;
            reject(signal.reason);
          },
          { once: true },
        );
      });
    },
  }) as Tool;
}

async function serve(options: ServerOptions): Promise<RunningServer> {
  // Responses are not checked against the spec here: on Express that check runs in the answer's write, which the
  // budget charges, and it compiles on first use: the first client to call would pay for it.
  const running = await listen(makeServer({ logger: false, ...options }), { port: 0 });
  servers.push(running);
  return running;
}

/** Sends a call on a raw socket from `from` and leaves the socket open, unread; the caller destroys it. */
function hangingCall(baseUrl: string, body: unknown, from = "127.0.0.2"): Socket {
  const { hostname, port } = new URL(baseUrl);
  const payload = JSON.stringify(body);
  const socket = connect({ host: hostname, port: Number(port), localAddress: from });
  socket.on("error", () => {});
  socket.write(
    `POST /tools/call HTTP/1.1\r\nHost: ${hostname}:${port}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(payload)}\r\n\r\n${payload}`,
  );
  return socket;
}

async function until(check: () => boolean, ms = 5_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!check()) {
    if (Date.now() > deadline) {
      throw new Error("timed out waiting");
    }
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

describe("finding 2: wide bodies", () => {
  verifies(
    "limits.body-values",
    "refuses a body with more values than its bound with a 400, before parsing it",
    async () => {
      const server = await startServer({ logger: false });
      try {
        // The attack: 60,000 keys in `input`, 878 KB, under the 1 MiB limit.
        const reply = await callTool(server.baseUrl, { tool_id: "Calculator.Add", input: wideInput(60_000) });
        expectError(reply, 400);
        expect(reply.body.message).toBe("The request body holds too many values");
        expect(reply.body.developer_message).toContain("10000");
        await expectHealthy(server.baseUrl);
      } finally {
        await server.close();
      }
    },
  );

  verifies("limits.body-values", "takes the bound as an option", async () => {
    const server = await startServer({ logger: false, maxValues: 50 });
    try {
      expectError(await callTool(server.baseUrl, { tool_id: "Calculator.Add", input: wideInput(60) }), 400);
      const fits = await callTool(server.baseUrl, { tool_id: "Calculator.Add", input: { a: 1, b: [1, 2] } });
      expectError(fits, 422);
    } finally {
      await server.close();
    }
  });

  verifies(
    "call.input-422",
    "explains a large invalid input by its first error only: no error object per hostile key",
    async () => {
      const server = await startServer({ logger: false });
      try {
        const reply = await callTool(server.baseUrl, { tool_id: "Calculator.Add", input: wideInput(5_000) });
        expectError(reply, 422);
        expect(Object.keys(reply.body.parameter_errors)).toHaveLength(1);
        // A small input still has every problem explained.
        const small = await callTool(server.baseUrl, { tool_id: "Calculator.Add", input: { a: "1", b: "2", c: 3 } });
        expectError(small, 422);
        expect(Object.keys(small.body.parameter_errors).sort()).toEqual(["a", "b", "c"]);
      } finally {
        await server.close();
      }
    },
  );
});

let nudges = 0;
/**
 * A cheap call from another client, so the server knows others are calling: from a new address each time (of
 * 250), so that no nudging client runs up a debt of its own on a loaded test machine, where the budget's
 * wall-clock time can make even a cheap call look costly.
 */
const nudge = (baseUrl: string, headers: Record<string, string> = {}) =>
  callFrom(`127.0.1.${(nudges++ % 250) + 1}`, baseUrl, { tool_id: "Calculator.Add", input: { a: 1, b: 2 } }, headers);

const NUDGE_KEYS = Array.from({ length: 100 }, (_, i) => `nudge-${i}`);

describe("finding 2: one client cannot starve the rest", () => {
  verifies(
    "limits.fair-share",
    "answers a client over its share 429 with Retry-After, before reading its body, while others are served",
    async () => {
      const server = await serve({
        tools: testTools({ value: 0 }),
        // A small budget, so that a few wide bodies use it up on any machine, and cheap calls never do.
        fairness: { share: 0.1, burstMs: 20 },
      });
      const hostile = { tool_id: "Calculator.Add", input: wideInput(9_000) };
      const seen: number[] = [];
      let refused: (Reply & { connection: string | undefined }) | undefined;
      for (let i = 0; i < 200 && !refused; i++) {
        expect((await nudge(server.url)).status).toBe(200);
        const reply = await callFrom("127.0.0.2", server.url, hostile);
        seen.push(reply.status);
        if (reply.status === 429) {
          refused = reply;
        }
      }
      expect(refused, `statuses: ${seen.join(",")}`).toBeDefined();
      if (!refused) {
        return;
      }
      expectError(refused, 429);
      expect(Number(refused.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
      expect(refused.connection).toBe("close");
      expect(seen.slice(0, -1).every((status) => status === 422)).toBe(true);
      // Another client is not charged for it.
      const other = await callFrom("127.0.0.3", server.url, { tool_id: "Calculator.Add", input: { a: 1, b: 2 } });
      expect(other.status, other.text).toBe(200);
      // The refused client's budget drains: it is served again once Retry-After has passed.
      await new Promise((resolve) => setTimeout(resolve, Number(refused.headers.get("retry-after")) * 1000 + 100));
      const later = await callFrom("127.0.0.2", server.url, { tool_id: "Calculator.Add", input: { a: 1, b: 2 } });
      expect(later.status, later.text).toBe(200);
    },
  );

  verifies(
    "limits.fair-share",
    "charges the whole call, not only its parsing: valid calls that are cheap to parse but costly to answer",
    async () => {
      // A 900 KB name parses in about a millisecond, but checking it, running the tool, storing and writing the
      // 900 KB answer cost several times that: a share above the parsing alone is still overrun.
      const server = await serve({ tools: testTools({ value: 0 }), fairness: { share: 0.3, burstMs: 20 } });
      const name = "x".repeat(900_000);
      const seen: number[] = [];
      for (let i = 0; i < 100 && seen.at(-1) !== 429; i++) {
        await nudge(server.url);
        const reply = await callFrom("127.0.0.2", server.url, {
          tool_id: "Greeting.Hello@1",
          call_id: `big-${i}`,
          input: { name },
        });
        seen.push(reply.status);
      }
      expect(seen.at(-1), `statuses: ${seen.join(",")}`).toBe(429);
    },
  );

  verifies("limits.fair-share", "counts an authenticated client by its principal, wherever it calls from", async () => {
    const server = await serve({
      tools: testTools({ value: 0 }),
      // key-one is the client under test; the others nudge, one key each time, so that none runs up a debt.
      auth: { apiKeys: ["key-one", "key-two", ...NUDGE_KEYS] },
      fairness: { share: 0.1, burstMs: 20 },
    });
    const hostile = { tool_id: "Calculator.Add", input: wideInput(9_000) };
    let status = 0;
    for (let i = 0; i < 200 && status !== 429; i++) {
      // The same key from two addresses is one client.
      const from = i % 2 === 0 ? "127.0.0.2" : "127.0.0.4";
      await nudge(server.url, { "OXP-API-Key": NUDGE_KEYS[i % NUDGE_KEYS.length] as string });
      status = (await callFrom(from, server.url, hostile, { "OXP-API-Key": "key-one" })).status;
    }
    expect(status).toBe(429);
    const other = await callFrom(
      "127.0.0.2",
      server.url,
      { tool_id: "Calculator.Add", input: { a: 1, b: 2 } },
      {
        "OXP-API-Key": "key-two",
      },
    );
    expect(other.status, other.text).toBe(200);
  });

  verifies(
    "limits.fair-share",
    "counts an anonymous IPv6 caller by its /64, and an authenticated one by its principal",
    () => {
      const from = (remoteAddress: string) => remoteAddress;
      expect(clientOf("anonymous", from("2001:db8:1:2::5"))).toBe(clientOf("anonymous", from("2001:db8:1:2:ffff::9")));
      expect(clientOf("anonymous", from("2001:db8:1:3::5"))).not.toBe(clientOf("anonymous", from("2001:db8:1:2::5")));
      expect(clientOf("anonymous", from("::ffff:10.0.0.7"))).toBe(clientOf("anonymous", from("10.0.0.7")));
      expect(clientOf("api-key:0", from("127.0.0.1"))).toBe(clientOf("api-key:0", from("127.0.0.9")));
    },
  );

  verifies(
    "limits.fair-share",
    "lets a client alone on the server use all of it, and holds it to its share once another calls",
    async () => {
      const server = await serve({ tools: testTools({ value: 0 }), fairness: { share: 0.02, burstMs: 10 } });
      const hostile = { tool_id: "Calculator.Add", input: wideInput(9_000) };
      // Far past its share, but nobody else is calling: a batch job against a private server is not throttled.
      for (let i = 0; i < 30; i++) {
        expect((await callFrom("127.0.0.2", server.url, hostile)).status).toBe(422);
      }
      expect((await nudge(server.url)).status).toBe(200);
      const refused = await callFrom("127.0.0.2", server.url, hostile);
      expectError(refused, 429);
      // Its debt was capped: the wait is a second at most.
      expect(refused.headers.get("retry-after")).toBe("1");
    },
  );

  verifies(
    "limits.fair-share",
    "leaves a client of many cheap calls alone, whatever share of the server they take",
    async () => {
      // A tiny share and no burst: a client of costly calls would be refused at once. The budget meters wall-clock
      // time, and on a test machine running every suite at once a cheap call can be charged several milliseconds of
      // other processes' time: the threshold here (the default is 1 ms) is far above that.
      const server = await serve({
        tools: testTools({ value: 0 }),
        fairness: { share: 0.001, burstMs: 0, costlyCallMs: 50 },
      });
      const statuses = new Set<number>();
      for (let i = 0; i < 300; i++) {
        if (i % 10 === 0) {
          await nudge(server.url);
        }
        statuses.add(
          (await callFrom("127.0.0.2", server.url, { tool_id: "Calculator.Add", input: { a: i, b: 1 } })).status,
        );
      }
      expect([...statuses]).toEqual([200]);
    },
  );

  it("can be turned off", async () => {
    const server = await serve({ tools: testTools({ value: 0 }), fairness: false });
    const hostile = { tool_id: "Calculator.Add", input: wideInput(9_000) };
    for (let i = 0; i < 30; i++) {
      await nudge(server.url);
      expect((await callFrom("127.0.0.2", server.url, hostile)).status).toBe(422);
    }
  });
});

describe("finding 4: runs do not outlive their connections", () => {
  verifies("limits.orphan-runs-aborted", "aborts a run without a call_id once its client hangs up", async () => {
    const counts = { started: 0, aborted: 0, finished: 0 };
    const server = await serve({ tools: [waiter(counts)] });
    const sockets = Array.from({ length: 40 }, () => hangingCall(server.url, { tool_id: "Slow.Wait" }));
    await until(() => counts.started === 40);
    for (const socket of sockets) {
      socket.destroy();
    }
    await until(() => counts.aborted === 40, 3_000);
    expect(counts.finished).toBe(0);
    expect((await fetch(`${server.url}/health`)).status).toBe(200);
  });

  verifies(
    "limits.orphan-runs-aborted",
    "lets a run with a call_id finish when its client hangs up, and keeps its answer for the retry",
    async () => {
      const counts = { started: 0, aborted: 0, finished: 0 };
      const server = await serve({ tools: [waiter(counts, 300)] });
      const sockets = Array.from({ length: 5 }, (_, i) =>
        hangingCall(server.url, { tool_id: "Slow.Wait", call_id: `orphan-${i}` }),
      );
      await until(() => counts.started === 5);
      for (const socket of sockets) {
        socket.destroy();
      }
      await until(() => counts.finished === 5, 3_000);
      expect(counts.aborted).toBe(0);
      for (let i = 0; i < 5; i++) {
        const retry = await callFrom("127.0.0.2", server.url, { tool_id: "Slow.Wait", call_id: `orphan-${i}` });
        expect(retry.status, retry.text).toBe(200);
        expect(retry.body).toMatchObject({ call_id: `orphan-${i}`, success: true, value: "done" });
      }
      expect(counts.started).toBe(5);
    },
  );

  verifies(
    "limits.running-calls-bounded",
    "bounds the runs in progress per client (429) and in total (503), orphans with call_ids included",
    async () => {
      const counts = { started: 0, aborted: 0, finished: 0 };
      const server = await serve({
        tools: [waiter(counts), ...testTools({ value: 0 })],
        maxRunningCallsPerClient: 3,
        maxRunningCalls: 5,
      });
      // The attack: calls with call_ids whose clients hang up at once keep running.
      const orphans = Array.from({ length: 3 }, (_, i) =>
        hangingCall(server.url, { tool_id: "Slow.Wait", call_id: `held-${i}` }, "127.0.0.2"),
      );
      await until(() => counts.started === 3);
      for (const socket of orphans) {
        socket.destroy();
      }
      const mine = await callFrom("127.0.0.2", server.url, { tool_id: "Slow.Wait", call_id: "one-more" });
      expectError(mine, 429);
      expect(mine.headers.get("retry-after")).toBe("1");
      // A synchronous tool is refused too while the client is at its bound: the bound is on the client's calls.
      expectError(await callFrom("127.0.0.2", server.url, { tool_id: "Calculator.Add", input: { a: 1, b: 2 } }), 429);
      // Another client still runs calls, up to the server's total.
      const others = Array.from({ length: 2 }, () => hangingCall(server.url, { tool_id: "Slow.Wait" }, "127.0.0.3"));
      await until(() => counts.started === 5);
      const full = await callFrom("127.0.0.4", server.url, { tool_id: "Slow.Wait" });
      expectError(full, 503);
      expect(full.headers.get("retry-after")).toBe("1");
      for (const socket of others) {
        socket.destroy();
      }
      await until(() => counts.aborted === 2);
      // A run's slot is freed when it ends: the other client is served again.
      expect(
        (await callFrom("127.0.0.4", server.url, { tool_id: "Calculator.Add", input: { a: 1, b: 2 } })).status,
      ).toBe(200);
      expect(counts.finished).toBe(0);
    },
  );
});
