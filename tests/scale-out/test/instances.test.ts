// Three demo instances sharing one real redis-server: a call_id runs once whichever instances get it, and challenges move between instances.
import { createClient, OxpServerError } from "@otc/client";
import { defineTool, OxpToolError } from "@otc/server";
import { type RedisServer, startRedisServer } from "@otc/test-helpers/redis-server";
import { until } from "@otc/test-helpers/until";
import { Redis } from "ioredis";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { approve, type Instance, onInstance, startInstances, startToolServer, type ToolServer } from "./cluster.js";

let redis: RedisServer;
let admin: Redis;
let instances: Instance[];
/** Three servers of the slow tools below, each with its own Redis connection. */
let servers: ToolServer[];
let next = 0;
const callId = (name: string) => `${name}-${next++}-${Date.now()}`;
/** A client per instance, retries off: each test decides what is sent where. */
const clientOf = (instance: { url: string } | undefined) =>
  createClient({ baseUrl: instance?.url ?? "", retry: { maxAttempts: 1 } });

/**
 * Two tools whose runs, once a test arms them with `started()`, go on until the test calls `finish()`, so that
 * duplicates sent to other instances arrive mid-run: Slow.Count succeeds, Slow.Fail fails retryably. The counts are
 * shared, since every server runs in this process.
 */
const slow = (() => {
  const runs = { count: 0, failures: 0 };
  let onStart: (() => void) | undefined;
  /** What a run waits for before it ends: at once, until a test arms a new one. */
  let finished = Promise.resolve();
  let finish = () => {};
  const wait = async () => {
    onStart?.();
    await finished;
  };
  const tool = (name: string, run: () => { run: number }) =>
    defineTool({
      toolkit: "Slow",
      name,
      version: "1.0.0",
      description: "Runs until the test lets it end.",
      inputSchema: { type: "object", properties: {}, additionalProperties: false },
      outputSchema: { type: "object", properties: { run: { type: "integer" } }, required: ["run"] },
      run: async () => {
        await wait();
        return run();
      },
    });
  return {
    runs,
    /** Resolves when the next run of either tool starts; that run, and any until `finish()`, go on until then. */
    started: () => {
      finished = new Promise<void>((resolve) => {
        finish = resolve;
      });
      return new Promise<void>((resolve) => {
        onStart = resolve;
      });
    },
    /** Lets the runs end. */
    finish: () => finish(),
    tools: [
      tool("Count", () => ({ run: ++runs.count })),
      tool("Fail", () => {
        throw new OxpToolError(`Busy (run ${++runs.failures})`, { canRetry: true });
      }),
    ],
  };
})();

// A run ends with its test, whatever the test let it do: one that failed mid-run leaves none behind.
afterEach(() => {
  slow.finish();
});

/**
 * Resolves once `count` instances listen on Redis for the end of call `id` (as the one running it does, and as one
 * does while a duplicate waits there for its result): each follows a call_id on a channel named like its record.
 */
async function listening(id: string, count: number): Promise<void> {
  const channel = servers[0]?.state.idempotencyStore.keyOf({ principal: "anonymous", callId: id }) ?? "";
  await until(
    async () => {
      const [, subscribers] = (await admin.pubsub("NUMSUB", channel)) as [string, number];
      return subscribers >= count;
    },
    { what: `${count} instances listening for the end of ${id}` },
  );
}

beforeAll(async () => {
  redis = await startRedisServer();
  admin = new Redis(redis.url);
  instances = await startInstances(redis.url, 3);
  servers = await Promise.all([0, 1, 2].map(() => startToolServer(redis.url, slow.tools)));
});
afterAll(async () => {
  await Promise.all([...(instances ?? []), ...(servers ?? [])].map((instance) => instance.close()));
  admin?.disconnect();
  await redis?.close();
});

describe("three instances on one Redis", () => {
  it("runs a call_id exactly once while its duplicates reach the two other instances mid-run", async () => {
    const id = callId("slow-count");
    const request = { tool_id: "Slow.Count", input: {}, call_id: id };
    const started = slow.started();
    const first = clientOf(servers[0]).callTool(request);
    await started;
    // While instance 0 runs it, the same call_id reaches 1 and 2: they wait on Redis for its result. The run ends
    // once both do (instance 0 listens too, for a cancel).
    const duplicates = Array.from({ length: 6 }, (_, i) => clientOf(servers[1 + (i % 2)]).callTool(request));
    await listening(id, 3);
    slow.finish();
    const responses = await Promise.all([first, ...duplicates]);
    expect(slow.runs.count).toBe(1);
    expect(responses[0]).toMatchObject({ success: true, call_id: id, value: { run: 1 } });
    for (const response of responses) {
      expect(response).toEqual(responses[0]);
    }
    // And a later retry on any instance is a replay.
    expect(await clientOf(servers[2]).callTool(request)).toEqual(responses[0]);
    expect(slow.runs.count).toBe(1);
  });

  it("runs a retryable failure once per concurrent burst across instances, and a later retry again", async () => {
    const id = callId("slow-fail");
    const request = { tool_id: "Slow.Fail", input: {}, call_id: id };
    const started = slow.started();
    const onA = clientOf(servers[0]).callTool(request);
    await started;
    // Sent to B while A runs it: B waits for A's run and gets its failure, which is not kept. A's run ends once B
    // waits (A listens too, for a cancel).
    const onB = clientOf(servers[1]).callTool(request);
    await listening(id, 2);
    slow.finish();
    const [a, b] = await Promise.all([onA, onB]);
    expect(slow.runs.failures).toBe(1);
    expect(a).toMatchObject({ success: false, call_id: id, error: { can_retry: true, message: "Busy (run 1)" } });
    expect(b).toEqual(a);
    const key = servers[0]?.state.idempotencyStore.keyOf({ principal: "anonymous", callId: id }) ?? "";
    expect(await admin.exists(key)).toBe(0);
    // A retry after the burst runs the tool again, on whichever instance.
    const retry = await clientOf(servers[2]).callTool(request);
    expect(slow.runs.failures).toBe(2);
    expect(retry).toMatchObject({ success: false, error: { can_retry: true, message: "Busy (run 2)" } });
  });

  it("answers 400 on every instance for the same call_id with a different input", async () => {
    const id = callId("reuse");
    await clientOf(instances[0]).callTool({ tool_id: "Counter.Increment", input: { by: 2 }, call_id: id });
    for (const instance of instances) {
      const refused = await clientOf(instance)
        .callTool({ tool_id: "Counter.Increment", input: { by: 3 }, call_id: id })
        .catch((error: unknown) => error);
      expect(refused).toBeInstanceOf(OxpServerError);
      expect((refused as OxpServerError).status).toBe(400);
      expect((refused as OxpServerError).message).toMatch(/already used for a different call/);
    }
  });

  it("does not keep a retryable failure: the key is freed, and a retry on another instance runs again", async () => {
    const id = callId("doorbell");
    const first = await clientOf(instances[0]).callTool({
      tool_id: "Doorbell.Ring",
      input: { doorbell_id: "no-such-door" },
      call_id: id,
    });
    expect(first).toMatchObject({ success: false, error: { can_retry: true } });
    // Not kept: the key is gone at once, so a retry runs the tool again rather than replaying the failure.
    expect(
      await admin.exists(instances[0]?.state.idempotencyStore.keyOf({ principal: "anonymous", callId: id }) ?? ""),
    ).toBe(0);
    const retry = await clientOf(instances[1]).callTool({
      tool_id: "Doorbell.Ring",
      input: { doorbell_id: "no-such-door" },
      call_id: id,
    });
    expect(retry).toMatchObject({ success: false, error: { can_retry: true } });
  });

  it("runs a retry of a retryable failure again on another instance, then replays its success", async () => {
    let runs = 0;
    // Fails (retryably) on its first run, whichever instance runs it; succeeds after.
    const flaky = defineTool({
      toolkit: "Flaky",
      name: "Once",
      version: "1.0.0",
      description: "Fails once, retryably.",
      inputSchema: { type: "object", properties: {}, additionalProperties: false },
      outputSchema: { type: "object", properties: { run: { type: "integer" } }, required: ["run"] },
      run: () => {
        runs++;
        if (runs === 1) {
          throw new OxpToolError("Not yet", { canRetry: true });
        }
        return { run: runs };
      },
    });
    const servers = await Promise.all([0, 1, 2].map(() => startToolServer(redis.url, [flaky])));
    try {
      const id = callId("flaky");
      const call = (i: number) =>
        createClient({ baseUrl: servers[i]?.url ?? "", retry: { maxAttempts: 1 } }).callTool({
          tool_id: "Flaky.Once",
          input: {},
          call_id: id,
        });
      expect(await call(0)).toMatchObject({ success: false, error: { can_retry: true } });
      expect(await call(1)).toMatchObject({ success: true, value: { run: 2 } });
      expect(await call(2)).toMatchObject({ success: true, value: { run: 2 } });
      expect(runs).toBe(2);
    } finally {
      await Promise.all(servers.map((server) => server.close()));
    }
  });

  it("completes a challenge started on A through B's check_url and consent page, and the retried call succeeds on C", async () => {
    const [a, b, c] = instances;
    const request = { tool_id: "Gmail.GetEmails", input: {}, context: { user_id: `ann-${next++}` } };
    const refused = await clientOf(a)
      .callTool(request)
      .catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(OxpServerError);
    const [challenge] = (refused as OxpServerError).authorizationChallenges;
    if (!challenge?.url || !challenge.check_url || !a || !b || !c) {
      throw new Error("no challenge");
    }
    expect(challenge.url.startsWith(a.url)).toBe(true);

    const checkOnB = onInstance(challenge.check_url, b.url);
    expect(await (await fetch(checkOnB)).json()).toEqual({ status: "pending" });
    const decided = await approve(onInstance(challenge.url, b.url));
    expect(decided.status).toBe(303);
    expect(await (await fetch(checkOnB)).json()).toEqual({ status: "completed" });
    expect(await (await fetch(challenge.check_url)).json()).toEqual({ status: "completed" });

    const emails = await clientOf(c).callTool(request);
    expect(emails).toMatchObject({ success: true });
    // The call on A with the same user now succeeds too: the token is shared.
    expect(await clientOf(a).callTool(request)).toMatchObject({ success: true });
  });
});
