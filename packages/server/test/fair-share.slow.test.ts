// Issue 20, finding 2 replayed against a real server under load: one client cannot starve the rest. Slow gate: the budget meters the real time each call costs.
import { verifies } from "@otc/test-helpers/verifies";
import { afterEach, describe, expect } from "vitest";
import { listen, type RunningServer, type ServerOptions } from "../src/index.js";
import { expectError, makeServer } from "./harness.js";
import { callFrom, nudge, type Reply, wideInput } from "./load.js";
import { testTools } from "./tools.js";

const servers: RunningServer[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => server.close()));
});

async function serve(options: ServerOptions): Promise<RunningServer> {
  // Responses are not checked against the spec here: on Express that check runs in the answer's write, which the
  // budget charges, and it compiles on first use: the first client to call would pay for it.
  const running = await listen(makeServer({ logger: false, ...options }), { port: 0 });
  servers.push(running);
  return running;
}

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
});
