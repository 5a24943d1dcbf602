// Issue 20, findings 2 and 4 replayed against a real server: wide bodies, how clients are told apart, runs that outlive their connections (one client starving the rest, measured under load: fair-share.slow.test.ts).
import { connect, type Socket } from "node:net";
import { until } from "@otc/test-helpers/until";
import { verifies } from "@otc/test-helpers/verifies";
import { afterEach, describe, expect, it } from "vitest";
import { clientOf } from "../src/http/client-key.js";
import { defineTool, listen, type RunningServer, type ServerOptions, type Tool } from "../src/index.js";
import { callTool, expectError, expectHealthy, makeServer, startServer } from "./harness.js";
import { callFrom, nudge, wideInput } from "./load.js";
import { testTools } from "./tools.js";

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
        // real time: the tool's own work, which ends by itself unless its run is aborted first.
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

describe("finding 2: one client cannot starve the rest", () => {
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
    await until(() => counts.aborted === 40);
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
      await until(() => counts.finished === 5);
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
