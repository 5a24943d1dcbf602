// Faults with real processes: Redis stopped under load (quick 503s, then recovery by itself), and an instance killed with -9 mid-call (its claim lapses).
import { type ChildProcess, spawn } from "node:child_process";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { createClient } from "@otc/client";
import { type RedisServer, startRedisServer } from "@otc/test-helpers/redis-server";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type Instance, startInstances, startToolServer } from "./cluster.js";
import { slowTool } from "./fixtures/slow-tool.js";

let redis: RedisServer;
let next = 0;

beforeAll(async () => {
  redis = await startRedisServer();
});
afterAll(async () => {
  await redis?.close();
});

/** One raw call (no client retries), timed. */
async function rawCall(baseUrl: string, body: Record<string, unknown>) {
  const started = Date.now();
  const answer = await fetch(`${baseUrl}/tools/call`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
    signal: AbortSignal.timeout(15_000),
  });
  const text = await answer.text();
  return {
    status: answer.status,
    retryAfter: answer.headers.get("retry-after"),
    contentType: answer.headers.get("content-type") ?? "",
    text,
    ms: Date.now() - started,
  };
}
const counter = () => ({ tool_id: "Counter.Increment", input: { by: 1 }, call_id: `load-${next++}` });

describe("Redis stopped during load", () => {
  let instances: Instance[] = [];
  afterAll(async () => {
    await Promise.all(instances.map((instance) => instance.close()));
  });

  it("answers calls 503 JSON quickly while Redis is down, and recovers by itself once it is back", async () => {
    instances = await startInstances(redis.url, 3);
    const urls = instances.map((instance) => instance.url);
    // Load: each instance gets calls with call_ids back to back, all through the outage.
    let loading = true;
    const seen: { status: number; ms: number }[] = [];
    const load = Promise.all(
      urls.map(async (url) => {
        while (loading) {
          seen.push(await rawCall(url, counter()));
        }
      }),
    );
    await expect.poll(() => seen.filter((call) => call.status === 200).length, { timeout: 10_000 }).toBeGreaterThan(30);

    await redis.stop();
    const down = await Promise.all(urls.flatMap((url) => [rawCall(url, counter()), rawCall(url, counter())]));
    for (const answer of down) {
      expect(answer.status, answer.text).toBe(503);
      expect(answer.contentType).toMatch(/^application\/json/);
      expect(JSON.parse(answer.text)).toMatchObject({ message: expect.any(String) });
      expect(answer.text).not.toMatch(/\n\s+at |node_modules|\.ts:\d+/);
      expect(answer.retryAfter).toMatch(/^\d+$/);
      // Bounded by the connection's readiness wait and command timeout, not a hang.
      expect(answer.ms).toBeLessThan(5_000);
    }
    // The consent page and a challenge's check_url need the challenge store: 503 JSON too, not a 500 or a hang.
    for (const path of ["/demo/authorize/google.some-id", "/authorization/challenges/google.some-id"]) {
      const answer = await fetch(`${urls[1]}${path}`, { signal: AbortSignal.timeout(5_000) });
      expect(answer.status, path).toBe(503);
      expect(answer.headers.get("retry-after")).toMatch(/^\d+$/);
      expect(await answer.json()).toMatchObject({ message: expect.any(String) });
    }
    // A call that needs no shared state (no call_id) is still served.
    expect((await rawCall(urls[0] ?? "", { tool_id: "Calculator.Add", input: { a: 1, b: 2 } })).status).toBe(200);

    await redis.start();
    // No restart, no manual reconnect: every instance serves call_ids again.
    for (const url of urls) {
      await expect
        .poll(async () => (await rawCall(url, counter())).status, { timeout: 10_000, interval: 100 })
        .toBe(200);
    }
    loading = false;
    await load;
    expect(seen.filter((call) => call.status >= 500 && call.status !== 503)).toEqual([]);
    for (const call of seen) {
      expect(call.ms).toBeLessThan(5_000);
    }
  });
});

describe("an instance killed mid-call", () => {
  let child: ChildProcess | undefined;
  afterAll(() => {
    if (child?.exitCode === null) {
      child.kill("SIGKILL");
    }
  });

  it("leaves no key blocking the call_id: after the claim's TTL, the call runs elsewhere", async () => {
    const fixture = fileURLToPath(new URL("./fixtures/slow-server.ts", import.meta.url));
    const spawned = spawn(process.execPath, ["--import", "tsx", fixture], {
      cwd: fileURLToPath(new URL("..", import.meta.url)),
      env: { ...process.env, REDIS_URL: redis.url },
      stdio: ["ignore", "pipe", "inherit"],
    });
    child = spawned;
    const lines = createInterface({ input: spawned.stdout as NodeJS.ReadableStream })[Symbol.asyncIterator]();
    const nextLine = async () => {
      const line = await lines.next();
      if (line.done) {
        throw new Error("the child server exited");
      }
      return line.value;
    };
    const childUrl = await nextLine();
    expect(childUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);

    const request = { tool_id: "Slow.Run", input: { ms: 1_000 }, call_id: `killed-${Date.now()}` };
    const killedCall = rawCall(childUrl, request).catch((error: unknown) => error);
    expect(await nextLine()).toBe("running");
    spawned.kill("SIGKILL");
    expect(await killedCall).toBeInstanceOf(Error);

    let runs = 0;
    const survivor = await startToolServer(redis.url, [slowTool(() => runs++)]);
    const admin = new Redis(redis.url);
    try {
      // The dead instance's claim is still there, but with a TTL: the tool's time limit plus 5 s.
      const key = survivor.state.idempotencyStore.keyOf({ principal: "anonymous", callId: request.call_id });
      const ttl = await admin.pttl(key);
      expect(ttl).toBeGreaterThan(0);
      expect(ttl).toBeLessThanOrEqual(6_500);
      // The retry waits for the dead run, sees its claim lapse, and runs the call itself.
      const client = createClient({ baseUrl: survivor.url, retry: { maxAttempts: 1 }, timeoutMs: 15_000 });
      const response = await client.callTool(request);
      expect(response).toMatchObject({ success: true, value: { pid: process.pid } });
      expect(runs).toBe(1);
      // And it is stored: a further retry is a replay.
      expect(await client.callTool(request)).toEqual(response);
      expect(runs).toBe(1);
    } finally {
      admin.disconnect();
      await survivor.close();
    }
  });
});
