// Issue 34, F4 replayed against a real server: costly anonymous calls spread over 16 loopback addresses are held to one share between them, while a cheap call passes. Slow gate: the budget meters the real time each call costs.
import { verifies } from "@otc/test-helpers/verifies";
import { afterEach, describe, expect } from "vitest";
import { listen, type RunningServer } from "../src/index.js";
import { expectError, makeServer } from "./harness.js";
import { callFrom, nudge, wideInput } from "./load.js";
import { testTools } from "./tools.js";

const servers: RunningServer[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => server.close()));
});

describe("costly anonymous calls spread over addresses", () => {
  verifies(
    "limits.fair-share",
    "refuses them 429 once together they pass one share, and still serves a cheap call from another address",
    async () => {
      // Responses are not checked against the spec: on Express that check runs in the answer's write, which the
      // budget charges. A small share, so that a few dozen wide bodies use it up on any machine; a burst large enough
      // that no one address's few calls pass it, even with a pause of the machine charged to one of them.
      const server = await listen(
        makeServer({ tools: testTools({ value: 0 }), logger: false, fairness: { share: 0.1, burstMs: 100 } }),
        { port: 0 },
      );
      servers.push(server);
      const hostile = { tool_id: "Calculator.Add", input: wideInput(9_000) };
      // 16 addresses in turn: each gets a sixteenth of the calls, far under its own share of 10 % (it drains while
      // the 15 others call), so only the budget they share refuses them.
      const from = Array.from({ length: 16 }, (_, i) => `127.0.0.${i + 2}`);
      const seen: number[] = [];
      for (let i = 0; i < 400 && !seen.includes(429); i++) {
        expect((await nudge(server.url)).status).toBe(200);
        const reply = await callFrom(from[i % from.length] as string, server.url, hostile);
        seen.push(reply.status);
        if (reply.status === 429) {
          expectError(reply, 429);
          expect(Number(reply.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
        }
      }
      expect(seen, `statuses: ${seen.join(",")}`).toContain(429);
      // A cheap call from another address is served meanwhile.
      const cheap = await callFrom("127.0.2.1", server.url, { tool_id: "Calculator.Add", input: { a: 1, b: 2 } });
      expect(cheap.status, cheap.text).toBe(200);
    },
  );
});
