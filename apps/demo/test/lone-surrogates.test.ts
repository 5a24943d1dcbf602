// Finding 9a of issue 20 against the running demo: a lone surrogate ("\ud800", valid JSON) in call_id or user_id is answered as any other id, with the state in memory or in a real redis-server: no 503, no error log, and under a key of its own.
import { createRedisState } from "@otc/redis";
import { startRedisServer } from "@otc/test-helpers/redis-server";
import { verifies } from "@otc/test-helpers/verifies";
import { afterAll, beforeAll, describe, expect } from "vitest";
import type { DemoOptions } from "../src/demo.js";
import { approve, callTool, expectError, type Running, send, startDemo } from "./harness.js";

/** The server's stores, and how to close them. */
interface State {
  options: DemoOptions;
  close(): Promise<void>;
}

const STATES: [string, () => Promise<State>][] = [
  ["in memory", async () => ({ options: {}, close: async () => {} })],
  [
    "in Redis",
    async () => {
      const redis = await startRedisServer();
      const state = createRedisState(redis.url);
      await state.ready();
      return {
        options: {
          idempotencyStore: state.idempotencyStore,
          tokenStore: state.tokenStore,
          challengeStore: state.challengeStore,
        },
        close: async () => {
          await state.close();
          await redis.close();
        },
      };
    },
  ],
];

const add = (callId: string, a: number) => ({ tool_id: "Calculator.Add", call_id: callId, input: { a, b: 1 } });
const gmail = (userId: string) => ({ tool_id: "Gmail.GetEmails", input: {}, context: { user_id: userId } });

describe.each(STATES)("a lone surrogate in an id, with the state %s", (_where, make) => {
  let state: State;
  let server: Running;
  beforeAll(async () => {
    state = await make();
    server = await startDemo(state.options);
  });
  afterAll(async () => {
    await server?.close();
    await state?.close();
  });

  verifies(
    ["limits.lone-surrogate-ids", "limits.no-5xx-for-requests", "idempotency.replay"],
    "in call_id: the call runs and is replayed, and a call_id differing only there is another key",
    async () => {
      // callTool sends JSON.stringify's text: `"call_id":"\ud800"`, an escape JSON allows.
      const first = await callTool(server.baseUrl, add("\ud800", 1));
      expect(first.status, first.text).toBe(200);
      expect(first.body).toMatchObject({ call_id: "\ud800", success: true, value: 2 });
      const replayed = await callTool(server.baseUrl, add("\ud800", 1));
      expect(replayed.body).toEqual(first.body);
      // Other ids a lossy encoding would fold into the same key: each is a call of its own, not a mismatch 400.
      for (const [i, callId] of ["\udc00", "\ufffd", "%uD800", "x\ud800"].entries()) {
        const other = await callTool(server.baseUrl, add(callId, 10 + i));
        expect(other.status, other.text).toBe(200);
        expect(other.body).toMatchObject({ call_id: callId, value: 11 + i });
      }
      expect(server.logs().filter((line) => Number(line.level) >= 50)).toEqual([]);
    },
  );

  verifies(
    [
      "limits.lone-surrogate-ids",
      "limits.no-5xx-for-requests",
      "requirements.challenge-400",
      "requirements.challenge-completed-retry",
    ],
    "in user_id: the challenge starts, completes, and its token serves that user only",
    async () => {
      const challenged = await callTool(server.baseUrl, gmail("\ud800"));
      expectError(challenged, 400);
      const [challenge] = challenged.body.missing_requirements.authorization;
      await approve(challenge.url);
      expect((await send(challenge.check_url)).body).toEqual({ status: "completed" });
      const retried = await callTool(server.baseUrl, gmail("\ud800"));
      expect(retried.status, retried.text).toBe(200);
      // The token was stored for "\ud800" alone.
      for (const userId of ["\udc00", "\ufffd", "%uD800"]) {
        const other = await callTool(server.baseUrl, gmail(userId));
        expectError(other, 400);
        expect(other.body.missing_requirements.authorization).toHaveLength(1);
      }
      expect(server.logs().filter((line) => Number(line.level) >= 50)).toEqual([]);
    },
  );
});
