// The tasks extension (docs/protocol.md 9.3) across OXP servers sharing one real redis-server through RedisIdempotencyStore: three in this process (one of them, in some tests, behind a proxy that cuts or slows its connection), and one in a child process that the test kills mid-call.
import { type ChildProcess, spawn } from "node:child_process";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { createHandler, listen } from "@otc/server";
import { callTool, send } from "@otc/test-helpers/http";
import { ManualClock } from "@otc/test-helpers/manual-clock";
import { type RedisServer, startRedisServer } from "@otc/test-helpers/redis-server";
import { until } from "@otc/test-helpers/until";
import { verifies } from "@otc/test-helpers/verifies";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect } from "vitest";
import { RedisIdempotencyStore } from "../src/index.js";
import { type SleepHooks, sleepTool } from "./fixtures/sleep-tool.js";
import { startTcpProxy, type TcpProxy } from "./tcp-proxy.js";

const TASKS = { "OXP-Extensions": "tasks" };
const ASYNC = { ...TASKS, Prefer: "respond-async" };
/** Short: the child server, on the wall clock, renews it every third of it, and a test waits for two leases of that. */
const LEASE_MS = 500;

let redis: RedisServer;
let admin: Redis;
beforeAll(async () => {
  redis = await startRedisServer();
  admin = new Redis(redis.url);
});
afterAll(async () => {
  admin.disconnect();
  await redis.close();
});

/** An OXP server on node:http with its own Redis connection, as a separate instance would have. */
interface Instance {
  url: string;
  store: RedisIdempotencyStore;
  close(): Promise<void>;
}

/**
 * How an instance differs from the others: its Redis address (a proxy's), its lease, how often it keeps progress, and
 * the clock its server and store follow (a test's, which it moves; else the wall clock).
 */
interface InstanceOptions {
  redisUrl?: string;
  taskLeaseMs?: number;
  progressPerSecond?: number;
  clock?: ManualClock;
}

async function startInstance(hooks: SleepHooks = {}, options: InstanceOptions = {}): Promise<Instance> {
  const { clock } = options;
  const store = new RedisIdempotencyStore(options.redisUrl ?? redis.url, clock ? { clock } : {});
  const handler = createHandler({
    tools: [sleepTool(hooks)],
    logger: false,
    idempotencyStore: store,
    taskLeaseMs: options.taskLeaseMs ?? LEASE_MS,
    ...(options.progressPerSecond ? { progressPerSecond: options.progressPerSecond } : {}),
    ...(clock ? { clock } : {}),
  });
  const running = await listen(handler, { port: 0, drainTimeoutMs: 500 });
  return {
    url: running.url,
    store,
    close: async () => {
      await running.close();
      await store.close();
    },
  };
}

/** The same server in a child process (test/fixtures/task-server.ts under tsx), which the test can kill. */
async function startChild(): Promise<{ url: string; child: ChildProcess; nextLine: () => Promise<string> }> {
  const child = spawn(
    process.execPath,
    ["--import", "tsx", fileURLToPath(new URL("./fixtures/task-server.ts", import.meta.url))],
    {
      cwd: fileURLToPath(new URL("..", import.meta.url)),
      env: { ...process.env, REDIS_URL: redis.url, TASK_LEASE_MS: String(LEASE_MS) },
      stdio: ["ignore", "pipe", "inherit"],
    },
  );
  const lines = createInterface({ input: child.stdout as NodeJS.ReadableStream })[Symbol.asyncIterator]();
  const nextLine = async () => {
    const line = await lines.next();
    if (line.done) {
      throw new Error("the child server exited");
    }
    return line.value;
  };
  return { url: await nextLine(), child, nextLine };
}

const statusOn = (instance: Instance | string, callId: string, headers: Record<string, string> = TASKS) =>
  send(`${typeof instance === "string" ? instance : instance.url}/tools/calls/${encodeURIComponent(callId)}`, {
    headers,
  });

/** How many connections listen on the channel of `name`. */
const listeners = async (name: string) => Number((await admin.pubsub("NUMSUB", name))[1]);

/** An event stream being read: what came so far, and its events (as {id, event, data}) once it ended. */
interface FollowedStream {
  text(): string;
  events: Promise<{ id?: string; event?: string; data?: unknown }[]>;
}

/** Reads an event stream as it comes, to its end (or, a guard against a hang, `ms`). */
function follow(response: Response, ms = 10_000): FollowedStream {
  const reader = (response.body as ReadableStream<Uint8Array>).getReader();
  const decoder = new TextDecoder();
  let text = "";
  const read = async () => {
    // real time: only a guard against a stream that never ends; each test waits for the stream's own end.
    const timer = setTimeout(() => void reader.cancel(), ms);
    try {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) {
          break;
        }
        text += decoder.decode(value, { stream: true });
      }
    } finally {
      clearTimeout(timer);
    }
    return parseEvents(text);
  };
  const events = read();
  events.catch(() => {});
  return { text: () => text, events };
}

/** The events of an event stream's text. */
function parseEvents(text: string): { id?: string; event?: string; data?: unknown }[] {
  return text
    .split("\n\n")
    .filter((block) => block.includes("event:"))
    .map((block) => {
      const fields = Object.fromEntries(
        block.split("\n").map((line) => [line.slice(0, line.indexOf(":")), line.slice(line.indexOf(":") + 2)]),
      );
      return { id: fields.id, event: fields.event, data: JSON.parse(fields.data ?? "null") };
    });
}

describe("three instances on one Redis", () => {
  verifies(
    "tasks.shared-store",
    "lets a call run on A be read and long-polled on B, streamed from C and cancelled through B; A's tool aborts",
    async () => {
      const aborted: string[] = [];
      const ran: string[] = [];
      const a = await startInstance({ onRun: (id) => ran.push(`A ${id}`), onAbort: (id) => aborted.push(`A ${id}`) });
      const [b, c] = await Promise.all([
        startInstance({ onRun: (id) => ran.push(`B ${id}`) }),
        startInstance({ onRun: (id) => ran.push(`C ${id}`) }),
      ]);
      try {
        const callId = `shared-${Date.now()}`;
        const accepted = await callTool(
          a.url,
          { tool_id: "Tasks.Sleep", input: { ms: 20_000 }, call_id: callId },
          ASYNC,
        );
        expect(accepted.status).toBe(202);
        // B reads the run's progress, which A keeps in Redis.
        await until(async () => (await statusOn(b, callId)).body.progress !== undefined, {
          what: "the run's progress on B",
        });
        const read = await statusOn(b, callId);
        expect(read.body).toMatchObject({ call_id: callId, status: "running", progress: { total: 20_000 } });
        // A long poll on B answers at the next progress (A keeps about 4 a second), far before its 10 s.
        const started = Date.now();
        const polled = await statusOn(b, callId, { ...TASKS, Prefer: "wait=10" });
        expect(Date.now() - started).toBeLessThan(3_000);
        expect(polled.body.status).toBe("running");
        expect(polled.body.progress.progress).toBeGreaterThan(read.body.progress.progress);
        // C streams it.
        const response = await fetch(`${c.url}/tools/calls/${callId}/events`, { headers: TASKS });
        expect(response.status).toBe(200);
        const stream = follow(response);
        await until(() => stream.text().includes("event: progress"), { what: "a progress event on C's stream" });
        // Cancelled through B: the cancel reaches A, whose tool sees its AbortSignal fire.
        const cancelled = await send(`${b.url}/tools/calls/${callId}`, { method: "DELETE", headers: TASKS });
        expect(cancelled.status).toBe(200);
        expect(cancelled.body).toMatchObject({
          status: "cancelled",
          result: { success: false, error: { message: "The call was cancelled", can_retry: false } },
        });
        expect(aborted).toEqual([`A ${callId}`]);
        const seen = await stream.events;
        expect(seen.filter((event) => event.event === "progress").length).toBeGreaterThanOrEqual(1);
        expect(seen.at(-1)).toMatchObject({
          id: "result",
          event: "result",
          data: { success: false, error: { message: "The call was cancelled" } },
        });
        expect((await statusOn(c, callId)).body.status).toBe("cancelled");
        // One run, on A; a repeated POST on C gets the kept (cancelled) call, and runs nothing.
        const again = await callTool(c.url, { tool_id: "Tasks.Sleep", input: { ms: 20_000 }, call_id: callId });
        expect(again.body).toMatchObject({ success: false, error: { message: "The call was cancelled" } });
        expect(ran).toEqual([`A ${callId}`]);
      } finally {
        await Promise.all([a.close(), b.close(), c.close()]);
      }
    },
  );
});

describe("an instance killed mid-call", () => {
  let child: ChildProcess | undefined;
  afterAll(() => {
    if (child?.exitCode === null && child.signalCode === null) {
      child.kill("SIGKILL");
    }
  });

  verifies(
    ["tasks.lease", "tasks.shared-store"],
    "ends its call as a retryable failure once the lease runs out, and a new POST runs it again on B",
    async () => {
      const started = await startChild();
      child = started.child;
      const ran: string[] = [];
      // A, the child, follows the wall clock. B follows a clock of the test's, from the wall clock's now: A's leases
      // read as far off there as they are, and run out for B when the test moves B's clock past them.
      const clock = new ManualClock(Date.now());
      const b = await startInstance({ onRun: (id) => ran.push(`B ${id}`) }, { clock });
      try {
        const callId = `orphan-${Date.now()}`;
        const request = { tool_id: "Tasks.Sleep", input: { ms: 60_000 }, call_id: callId };
        const accepted = await callTool(started.url, request, ASYNC);
        expect(accepted.status).toBe(202);
        expect(await started.nextLine()).toBe(`running ${callId}`);
        const record = b.store.keyOf({ principal: "anonymous", callId });
        const leaseOf = async () => Number((await admin.hget(record, "l")) ?? Number.NaN);
        // Past several leases, A still vouches for it: it renews its lease (by the wall clock) two leases on, and B,
        // its clock past the lease first read, reads the call running.
        await until(async () => !Number.isNaN(await leaseOf()), { what: "A's first lease" });
        const first = await leaseOf();
        await until(async () => (await leaseOf()) >= first + 2 * LEASE_MS, { what: "A to renew its lease" });
        await clock.advance(first + LEASE_MS - clock.now());
        expect((await statusOn(b, callId)).body.status).toBe("running");
        // A stream on B follows it: B listens on the call's channel, as A does (to hear a cancel).
        const stream = follow(await fetch(`${b.url}/tools/calls/${callId}/events`, { headers: TASKS }), 15_000);
        await until(async () => (await listeners(record)) === 2, { what: "B's stream to follow the call" });

        started.child.kill("SIGKILL");
        await new Promise((resolve) => started.child.once("exit", resolve));
        // B's clock up to A's last lease: the call is still vouched for.
        const last = await leaseOf();
        await clock.advance(last - clock.now());
        expect((await statusOn(b, callId)).body.status).toBe("running");
        // A long poll of up to 20 s by B's clock: no progress comes any more, the lease running out is the only change.
        const timers = clock.pending;
        const polled = statusOn(b, callId, { ...TASKS, Prefer: "wait=20" });
        await clock.untilPending(timers + 1);
        const deadRun = {
          status: "completed",
          result: {
            success: false,
            error: { message: "The server running the call stopped before it finished", can_retry: true },
          },
        };
        // Past its lease by B's clock (by a whole lease, which a renewal A sent as it died stays within), the call
        // reads as ended: never "running" forever.
        await clock.advance(LEASE_MS);
        expect((await statusOn(b, callId)).body).toMatchObject(deadRun);
        // The followers learn it too, without waiting for their own limits (20 s, by a clock moved 0.5 s since).
        expect((await polled).body).toMatchObject(deadRun);
        expect((await stream.events).at(-1)).toMatchObject({ event: "result", data: deadRun.result });

        // A new POST with its call_id runs the call again, on B, which vouches for it in turn.
        const again = await callTool(b.url, request, ASYNC);
        expect(again.status).toBe(202);
        expect(ran).toEqual([`B ${callId}`]);
        await until(async () => (await statusOn(b, callId)).body.progress !== undefined, {
          what: "B's run's progress",
        });
        await clock.advance(3 * LEASE_MS);
        // Read through B's own connection, after the renewals it sent on it.
        expect((await b.store.get({ principal: "anonymous", callId }))?.leaseUntil).toBeGreaterThan(clock.now());
        expect((await statusOn(b, callId)).body).toMatchObject({ status: "running", progress: { total: 60_000 } });
        const cancelled = await send(`${b.url}/tools/calls/${callId}`, { method: "DELETE", headers: TASKS });
        expect(cancelled.body.status).toBe("cancelled");
      } finally {
        await b.close();
      }
    },
  );
});

/** Resolves once `message` is published on `channel` (heard by a connection of the test's own). */
async function published(channel: string, message: string): Promise<() => Promise<void>> {
  const listener = new Redis(redis.url);
  await listener.subscribe(channel);
  const heard = new Promise<void>((resolve) => {
    listener.on("message", (_channel: string, sent: string) => {
      if (sent === message) {
        resolve();
      }
    });
  });
  return async () => {
    try {
      await heard;
    } finally {
      listener.disconnect();
    }
  };
}

describe("a cancel sent while the running instance cannot hear it", () => {
  /**
   * A (behind a proxy, which can cut and hold back its subscriber) and B, on one clock of the test's, from the wall
   * clock's now. It moves only when the test moves it: A renews its lease then only, and B's DELETE, which answers
   * after at most 5 s by that clock, is answered by the call's end, however long that takes on the wall clock.
   */
  async function startPair(hooks: SleepHooks, taskLeaseMs: number) {
    const clock = new ManualClock(Date.now());
    const proxy = await startTcpProxy(redis.port);
    const a = await startInstance(hooks, { redisUrl: proxy.url, taskLeaseMs, clock });
    const b = await startInstance({}, { clock });
    return { clock, proxy, a, b };
  }

  /**
   * Starts a call on A (behind `proxy`) and cuts A's subscriber: it reconnects, but the proxy holds its SUBSCRIBE
   * back. Then cancels the call through B, and resolves once the cancel was published, unheard by A.
   */
  async function cancelUnheard(proxy: TcpProxy, a: Instance, b: Instance, callId: string) {
    const accepted = await callTool(a.url, { tool_id: "Tasks.Sleep", input: { ms: 20_000 }, call_id: callId }, ASYNC);
    expect(accepted.status).toBe(202);
    const channel = a.store.keyOf({ principal: "anonymous", callId });
    // A follows its call's channel (to hear a cancel): only then is there a subscription to cut.
    await until(async () => (await listeners(channel)) === 1, { what: "A to follow its call" });
    const held = proxy.holdSubscribes();
    await admin.client("KILL", "TYPE", "pubsub");
    await held;
    // Nobody listens on the channel now, and A cannot until the proxy lets its SUBSCRIBE through: what is published
    // from here on goes to none of A's connections.
    await until(async () => (await listeners(channel)) === 0, { what: "A's subscription to be cut" });
    const cancelSent = await published(channel, "c");
    const deleted = send(`${b.url}/tools/calls/${callId}`, { method: "DELETE", headers: TASKS });
    await cancelSent();
    return { deleted };
  }

  verifies(
    ["tasks.cancel", "tasks.shared-store"],
    "aborts A's tool once A's subscriber is back, well before the DELETE's 5 s",
    async () => {
      const aborted: string[] = [];
      // The clock never moves here: A never renews its lease, so only its subscriber coming back can bring the cancel.
      const { proxy, a, b } = await startPair({ onAbort: (id) => aborted.push(id) }, 30_000);
      try {
        const callId = `unheard-${Date.now()}`;
        const { deleted } = await cancelUnheard(proxy, a, b, callId);
        // A did not hear it: its SUBSCRIBE has not reached Redis.
        expect(aborted).toEqual([]);
        proxy.releaseSubscribes();
        // Answered before the DELETE's 5 s, which have not passed on the clock: by the call's end.
        const answer = await deleted;
        expect(answer.status).toBe(200);
        expect(answer.body).toMatchObject({
          status: "cancelled",
          result: { success: false, error: { message: "The call was cancelled", can_retry: false } },
        });
        expect(aborted).toEqual([callId]);
      } finally {
        proxy.releaseSubscribes();
        await Promise.all([a.close(), b.close()]);
        await proxy.close();
      }
    },
  );

  verifies(
    ["tasks.cancel", "tasks.lease"],
    "aborts A's tool at its next lease renewal while its subscriber is still cut off",
    async () => {
      const aborted: string[] = [];
      const { clock, proxy, a, b } = await startPair({ onAbort: (id) => aborted.push(id) }, 900);
      try {
        const callId = `renewed-${Date.now()}`;
        const { deleted } = await cancelUnheard(proxy, a, b, callId);
        expect(aborted).toEqual([]);
        // A renews every 300 ms: its next renewal finds the cancel in the record. Its SUBSCRIBE is held all along.
        await clock.advance(300);
        // Answered before the DELETE's 5 s, of which 0.3 s passed on the clock: by the call's end.
        const answer = await deleted;
        expect(answer.body).toMatchObject({ status: "cancelled", result: { error: { can_retry: false } } });
        expect(aborted).toEqual([callId]);
      } finally {
        proxy.releaseSubscribes();
        await Promise.all([a.close(), b.close()]);
        await proxy.close();
      }
    },
  );
});

describe("progress read in turn through several instances", () => {
  verifies(
    "tasks.shared-store",
    "never goes back, even when the running instance's Redis round trips are slow",
    async () => {
      const proxy = await startTcpProxy(redis.port);
      // A's commands reach Redis 20 ms after it sends them, and their replies come back 20 ms later.
      proxy.delayCommands(20);
      const a = await startInstance({}, { redisUrl: proxy.url, progressPerSecond: 20 });
      const [b, c] = await Promise.all([startInstance(), startInstance()]);
      try {
        const callId = `in-turn-${Date.now()}`;
        const accepted = await callTool(
          a.url,
          { tool_id: "Tasks.Sleep", input: { ms: 5_000 }, call_id: callId },
          ASYNC,
        );
        expect(accepted.status).toBe(202);
        // A client following the call through whichever instance answers: A (which runs it), B, C, A, B...
        const seen: number[] = [];
        const started = Date.now();
        for (let read = 0; Date.now() - started < 2_000; read++) {
          const status = await statusOn([a, b, c][read % 3] as Instance, callId);
          expect(status.body.status).toBe("running");
          seen.push(status.body.progress?.progress ?? 0);
        }
        // Many reads, through a run that moved on all along.
        expect(seen.length).toBeGreaterThan(20);
        expect(new Set(seen).size).toBeGreaterThan(5);
        // Never less than an answer before it, whichever instances the two came from.
        expect(seen.filter((value, index) => value < (seen[index - 1] ?? 0))).toEqual([]);
        await send(`${b.url}/tools/calls/${callId}`, { method: "DELETE", headers: TASKS });
      } finally {
        await Promise.all([a.close(), b.close(), c.close()]);
        await proxy.close();
      }
    },
  );
});
