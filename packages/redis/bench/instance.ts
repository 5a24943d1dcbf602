/** A bench server in its own process: two tools, call_ids kept in Redis (`--redis URL`) or in memory (`--memory`); prints its URL. */
import { createRedisState } from "@otc/redis";
import { createServer, defineTool, listen } from "@otc/server";

const args = process.argv.slice(2);
const option = (name: string) => {
  const at = args.indexOf(name);
  return at === -1 ? undefined : args[at + 1];
};
const redisUrl = option("--redis");
const retentionMs = Number(option("--retention-ms") ?? 30_000);

const add = defineTool({
  toolkit: "Bench",
  name: "Add",
  version: "1.0.0",
  description: "Adds two numbers.",
  inputSchema: {
    type: "object",
    properties: { a: { type: "number", description: "First." }, b: { type: "number", description: "Second." } },
    required: ["a", "b"],
    additionalProperties: false,
  },
  outputSchema: { type: "number" },
  run: ({ a, b }) => a + b,
});

/** How often Bench.Sleep reports its progress, in milliseconds: as often as the demo's System.Sleep. */
const SLEEP_PROGRESS_INTERVAL_MS = 100;

/**
 * Bench.Sleep, for asynchronous calls (the tasks extension): waits `ms`, reporting progress every 100 ms, and
 * answers `tag` with the pid of the process that ran it, so a caller reading the result through another instance
 * can tell the value is its own and that the run it started is the one that ended. Stops at once when aborted.
 */
const sleep = defineTool({
  toolkit: "Bench",
  name: "Sleep",
  version: "1.0.0",
  description: "Waits the given number of milliseconds, reporting progress; answers its tag and the server's pid.",
  inputSchema: {
    type: "object",
    properties: {
      ms: { type: "integer", minimum: 0, maximum: 60_000, description: "How long to wait, in milliseconds." },
      tag: { type: "integer", description: "Given back in the value." },
    },
    required: ["ms", "tag"],
    additionalProperties: false,
  },
  outputSchema: {
    type: "object",
    properties: { slept_ms: { type: "integer" }, tag: { type: "integer" }, pid: { type: "integer" } },
    required: ["slept_ms", "tag", "pid"],
    additionalProperties: false,
  },
  run: ({ ms, tag }, { signal, progress }) =>
    new Promise<{ slept_ms: number; tag: number; pid: number }>((resolve, reject) => {
      const started = Date.now();
      const ticker = setInterval(() => {
        const slept = Math.min(ms, Date.now() - started);
        progress({ progress: slept, total: ms, message: `Slept ${slept} of ${ms} ms` });
      }, SLEEP_PROGRESS_INTERVAL_MS);
      const stop = () => {
        clearTimeout(timer);
        clearInterval(ticker);
        signal.removeEventListener("abort", aborted);
      };
      const aborted = () => {
        stop();
        reject(signal.reason);
      };
      const timer = setTimeout(() => {
        stop();
        resolve({ slept_ms: ms, tag, pid: process.pid });
      }, ms);
      signal.addEventListener("abort", aborted, { once: true });
    }),
});

const state = redisUrl ? createRedisState(redisUrl) : undefined;
await state?.ready();
const app = createServer({
  tools: [add, sleep],
  logger: false,
  idempotencyRetentionMs: retentionMs,
  // The soak's load generator is one client (one address): the per-client bounds on asynchronous calls and event
  // streams (100 and 16) would cap its load rather than measure the store. The bound on all of them stays.
  maxAsyncCallsPerClient: 10_000,
  eventStreams: { maxPerClient: 10_000 },
  ...(state ? { idempotencyStore: state.idempotencyStore, tokenStore: state.tokenStore } : {}),
});
const { url } = await listen(app, { port: 0, maxConnections: 4_096 });
console.log(url);
