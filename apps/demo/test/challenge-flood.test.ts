// Finding 3 of issue 20 against the running demo: one principal starting challenges for thousands of user_ids (JWT `sub` a) never denies another principal (an API key) its challenge, with the challenges in memory or in a real redis-server.
import { createHmac } from "node:crypto";
import { createRedisState } from "@otc/redis";
import { type ChallengeStore, MemoryChallengeStore, type TokenStore } from "@otc/server";
import { startRedisServer } from "@otc/test-helpers/redis-server";
import { verifies } from "@otc/test-helpers/verifies";
import { afterAll, beforeAll, describe, expect } from "vitest";
import type { DemoOptions } from "../src/demo.js";
import { approve, callTool, expectError, type Running, send, startDemo } from "./harness.js";

const API_KEY = "flood-test-api-key";
const JWT_SECRET = "flood-test-jwt-secret-0123456789abcdef";
const AUTH = { auth: { apiKeys: [API_KEY], jwt: { secret: JWT_SECRET } } } satisfies DemoOptions;

/** An HS256 JWT for `sub`, valid for 10 minutes: the server's own kind of credential, made with node:crypto. */
function bearer(sub: string): Record<string, string> {
  const part = (value: object) => Buffer.from(JSON.stringify(value)).toString("base64url");
  const unsigned = `${part({ alg: "HS256", typ: "JWT" })}.${part({ sub, exp: Math.floor(Date.now() / 1000) + 600 })}`;
  const signature = createHmac("sha256", JWT_SECRET).update(unsigned).digest("base64url");
  return { authorization: `Bearer ${unsigned}.${signature}` };
}
const apiKey = { "OXP-API-Key": API_KEY };

const gmail = (userId: string) => ({ tool_id: "Gmail.GetEmails", input: {}, context: { user_id: userId } });

/** `count` Gmail calls as `headers`' principal, each for a new user id, `concurrency` at a time: the statuses seen, by count. */
async function flood(baseUrl: string, headers: Record<string, string>, count: number, concurrency = 16) {
  const statuses: Record<number, number> = {};
  let next = 0;
  const body = (i: number) => JSON.stringify(gmail(`flood-user-${i}`));
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < count) {
        const i = next++;
        const response = await fetch(`${baseUrl}/tools/call`, {
          method: "POST",
          headers: { "content-type": "application/json", ...headers },
          body: body(i),
        });
        await response.arrayBuffer();
        statuses[response.status] = (statuses[response.status] ?? 0) + 1;
      }
    }),
  );
  return statuses;
}

/** Starts a challenge for `userId` as the API-key principal: a 400 naming it, never a 503. */
async function challenge(server: Running, userId: string) {
  const reply = await callTool(server.baseUrl, gmail(userId), apiKey);
  expectError(reply, 400);
  const [started] = reply.body.missing_requirements.authorization;
  expect(started.id).toMatch(/^google\./);
  return started as { id: string; url: string; check_url: string };
}

/**
 * The replay: the API-key principal starts a challenge; the JWT principal starts `count` challenges,
 * each for a new user id; then the API-key principal's challenge is still there, it can complete it and
 * call Gmail, and a new call of its own still gets a challenge.
 */
async function replay(server: Running, count: number): Promise<void> {
  const before = await challenge(server, "victim-ann");
  const statuses = await flood(server.baseUrl, bearer("a"), count);
  // Every flooding call got its own challenge too: the store is never full, so no one is answered 503.
  expect(statuses).toEqual({ 400: count });
  const status = await send(before.check_url, { headers: apiKey });
  expect(status.body).toEqual({ status: "pending" });
  await challenge(server, "victim-bob");
  await approve(before.url);
  const retried = await callTool(server.baseUrl, gmail("victim-ann"), apiKey);
  expect(retried.status, retried.text).toBe(200);
  expect(server.logs().filter((line) => Number(line.level) >= 50)).toEqual([]);
}

/** Where the demo's provider keeps its challenges (and the server its tokens), and how many challenges are held. */
interface Stores {
  challenges: ChallengeStore;
  tokens?: TokenStore;
  held(): Promise<number | undefined>;
  close(): Promise<void>;
}

/**
 * Each store with a total of 150 challenges and 100 per principal (the defaults are 10,000 and 1,000: the same rule
 * in a tenth of the calls), the total between the per-principal cap and what the flood starts.
 */
const BOUNDS = { maxChallenges: 150, maxChallengesPerPrincipal: 100 };
const STORES: [string, () => Promise<Stores>][] = [
  [
    "in memory",
    async () => {
      const challenges = new MemoryChallengeStore(BOUNDS);
      return { challenges, held: async () => challenges.size, close: async () => {} };
    },
  ],
  [
    "in Redis",
    async () => {
      const redis = await startRedisServer();
      const state = createRedisState(redis.url, { challenges: BOUNDS });
      await state.ready();
      return {
        challenges: state.challengeStore,
        tokens: state.tokenStore,
        held: () => state.connection.client.zcard("oxp:challenges"),
        close: async () => {
          await state.close();
          await redis.close();
        },
      };
    },
  ],
];

describe.each(STORES)("one principal's challenges never deny another principal's, %s", (_where, make) => {
  let stores: Stores;
  let server: Running;
  beforeAll(async () => {
    stores = await make();
    server = await startDemo({
      ...AUTH,
      challengeStore: stores.challenges,
      ...(stores.tokens ? { tokenStore: stores.tokens } : {}),
    });
  });
  afterAll(async () => {
    await server?.close();
    await stores?.close();
  });

  verifies(
    ["requirements.challenges-per-principal", "requirements.consent-challenges-bounded", "limits.bounded-resources"],
    "160 challenges from one JWT principal, each for a new user_id, then an API key's call still gets its challenge",
    async () => {
      // Without a per-principal cap the flood fills the 150 and every later challenge, anyone's, is a 503.
      await replay(server, 160);
      // The flooder holds its cap of 100 (its newest), the API-key principal its 2.
      expect(await stores.held()).toBe(102);
    },
  );
});
