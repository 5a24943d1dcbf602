// Soak and comparison bench for @otc/redis: N server processes on one redis-server under full load (autocannon).
//   node packages/redis/bench/soak.mjs [seconds=600]      soak: RSS of each instance and Redis INFO memory every 15 s, 5xx counted
//   node packages/redis/bench/soak.mjs --compare [seconds=15 per phase]
//       calls/s and server CPU per call: 3 instances on Redis vs 1 in memory; and idempotent replays (one call_id) from Redis vs memory
//   node packages/redis/bench/soak.mjs --async [seconds=60]
//       asynchronous calls (the tasks extension, see async-soak.mjs): started on instance i, followed from i+1, some cancelled
//       through i+2, every end checked; calls/s, errors, RSS and Redis memory every 5 s; exits 1 on any error or unconfirmed call
// Options: --instances 3, --connections 16 (per instance), --retention-ms 30000 (idempotency retention: keys then plateau;
// 10000 with --async), --sample 15 (5 with --async). With --async: --workers 64 (calls in flight at once), --call-ms 1000
// (each call sleeps 0.5x to 1.5x this), --cancel 0.25 and --stream 0.25 (shares of calls cancelled and followed by event
// stream), --slow-ms 1000 (a follower told of a call's end later than this is an error), --late-ms 10000 (a call still
// running this long past its sleep is an error).
// Starts its own redis-server on a free port (REDIS_SERVER picks the binary) unless REDIS_URL is set.
import { randomUUID } from "node:crypto";
import autocannon from "autocannon";
import { Redis } from "ioredis";
import { asyncSoak } from "./async-soak.mjs";
import { cpuSeconds, mib, pad, redisMemory, rssMiB, startInstance, startRedis } from "./processes.mjs";

const args = process.argv.slice(2);
const option = (name, fallback) => {
  const at = args.indexOf(name);
  return at === -1 ? fallback : Number(args[at + 1]);
};
const compare = args.includes("--compare");
const asyncMode = args.includes("--async");
/** The flags that take no value. */
const SWITCHES = ["--compare", "--async"];
const positional = args.filter(
  (arg, i) => !arg.startsWith("--") && !(args[i - 1]?.startsWith("--") && !SWITCHES.includes(args[i - 1])),
);
const seconds = Number(positional[0] ?? (compare ? 15 : asyncMode ? 60 : 600));
const instances = option("--instances", 3);
const connections = option("--connections", 16);
const retentionMs = option("--retention-ms", asyncMode ? 10_000 : 30_000);
const sampleSeconds = option("--sample", asyncMode ? 5 : 15);

const body = (callId) => JSON.stringify({ tool_id: "Bench.Add", input: { a: 1, b: 2 }, call_id: callId });

/** Full load on every URL for `duration` s: a fresh call_id per request, or one fixed call_id (every call after the first is a replay). */
function load(urls, duration, { replay = false, onResponse = () => {} } = {}) {
  const fixed = randomUUID();
  return Promise.all(
    urls.map((url) => {
      const run = autocannon({
        url: `${url}/tools/call`,
        connections,
        duration,
        method: "POST",
        headers: { "content-type": "application/json" },
        requests: [{ setupRequest: (request) => ({ ...request, body: body(replay ? fixed : randomUUID()) }) }],
      });
      run.on("response", (_client, status) => onResponse(status));
      return run;
    }),
  );
}

async function soak() {
  const redis = await startRedis();
  const servers = await Promise.all(Array.from({ length: instances }, () => startInstance(redis.url, retentionMs)));
  const admin = new Redis(redis.url);
  let calls = 0;
  let errors5xx = 0;
  let windowCalls = 0;
  const header = [
    "   t s",
    ...servers.map((_, i) => `inst${i + 1} RSS MiB`),
    "redis used MiB",
    "redis RSS MiB",
    "   keys",
    " calls/s",
    "  5xx",
  ];
  console.log(
    `soak: ${seconds} s, ${instances} instances x ${connections} connections, retention ${retentionMs} ms, on ${redis.url}`,
  );
  console.log(header.join(" | "));
  const started = Date.now();
  const sample = async () => {
    const memory = await redisMemory(admin);
    const row = [
      pad(Math.round((Date.now() - started) / 1000), 6),
      ...servers.map((server) => pad(rssMiB(server.pid).toFixed(1), 13)),
      pad(mib(memory.used), 14),
      pad(mib(memory.rss), 13),
      pad(memory.keys, 7),
      pad(Math.round(windowCalls / sampleSeconds), 8),
      pad(errors5xx, 5),
    ];
    windowCalls = 0;
    console.log(row.join(" | "));
  };
  await sample();
  const timer = setInterval(() => sample().catch((error) => console.error(error.message)), sampleSeconds * 1000);
  const results = await load(
    servers.map((server) => server.url),
    seconds,
    {
      onResponse: (status) => {
        calls++;
        windowCalls++;
        if (status >= 500) {
          errors5xx++;
        }
      },
    },
  );
  clearInterval(timer);
  await sample();
  const non2xx = results.reduce((sum, result) => sum + result.non2xx, 0);
  const socketErrors = results.reduce((sum, result) => sum + result.errors + result.timeouts, 0);
  console.log(
    `total: ${calls} calls, ${(calls / seconds).toFixed(0)} calls/s, ${errors5xx} 5xx, ${non2xx} non-2xx, ${socketErrors} socket errors/timeouts`,
  );
  admin.disconnect();
  await Promise.all(servers.map((server) => server.stop()));
  await redis.stop();
}

/** One comparison phase: calls/s, and CPU per call of the server processes (and Redis's, apart). */
async function phase(name, servers, redisPid, options) {
  const pids = servers.map((server) => server.pid);
  const before = pids.map(cpuSeconds);
  const redisBefore = redisPid ? cpuSeconds(redisPid) : 0;
  let calls = 0;
  let failed = 0;
  await load(
    servers.map((server) => server.url),
    seconds,
    {
      ...options,
      onResponse: (status) => {
        calls++;
        if (status !== 200) {
          failed++;
        }
      },
    },
  );
  const serverCpu = pids.reduce((sum, pid, i) => sum + cpuSeconds(pid) - (before[i] ?? 0), 0);
  const redisCpu = redisPid ? cpuSeconds(redisPid) - redisBefore : 0;
  return {
    name,
    callsPerSecond: calls / seconds,
    serverUsPerCall: (serverCpu / calls) * 1e6,
    redisUsPerCall: (redisCpu / calls) * 1e6,
    failed,
  };
}

async function compareMode() {
  const rows = [];
  const redis = await startRedis();
  const onRedis = await Promise.all(Array.from({ length: instances }, () => startInstance(redis.url, retentionMs)));
  rows.push(await phase(`${instances} instances, Redis, new call_ids`, onRedis, redis.pid));
  rows.push(await phase(`${instances} instances, Redis, replays`, onRedis, redis.pid, { replay: true }));
  await Promise.all(onRedis.map((server) => server.stop()));
  const inMemory = [await startInstance(undefined, retentionMs)];
  rows.push(await phase("1 instance, memory, new call_ids", inMemory, undefined));
  rows.push(await phase("1 instance, memory, replays", inMemory, undefined, { replay: true }));
  await Promise.all(inMemory.map((server) => server.stop()));
  await redis.stop();
  console.log(
    `compare: ${seconds} s per phase, ${connections} connections per instance, ${process.env.REDIS_URL ? "external" : "local"} Redis`,
  );
  console.log("phase                                | calls/s | server CPU us/call | Redis CPU us/call | non-200");
  for (const row of rows) {
    console.log(
      [
        row.name.padEnd(36),
        pad(row.callsPerSecond.toFixed(0), 7),
        pad(row.serverUsPerCall.toFixed(0), 18),
        pad(row.redisUsPerCall.toFixed(0), 17),
        pad(row.failed, 7),
      ].join(" | "),
    );
  }
}

if (asyncMode) {
  const outcome = await asyncSoak({
    seconds,
    instances,
    workers: option("--workers", 64),
    callMs: option("--call-ms", 1_000),
    cancelShare: option("--cancel", 0.25),
    streamShare: option("--stream", 0.25),
    retentionMs,
    sampleSeconds,
    slowMs: option("--slow-ms", 1_000),
    lateMs: option("--late-ms", 10_000),
  });
  process.exitCode = outcome.errors + outcome.unconfirmed > 0 ? 1 : 0;
} else {
  await (compare ? compareMode() : soak());
}
