// Soak and comparison bench for @otc/redis: N server processes on one redis-server under full load (autocannon).
//   node packages/redis/bench/soak.mjs [seconds=600]      soak: RSS of each instance and Redis INFO memory every 15 s, 5xx counted
//   node packages/redis/bench/soak.mjs --compare [seconds=15 per phase]
//       calls/s and server CPU per call: 3 instances on Redis vs 1 in memory; and idempotent replays (one call_id) from Redis vs memory
// Options: --instances 3, --connections 16 (per instance), --retention-ms 30000 (idempotency retention: keys then plateau), --sample 15.
// Starts its own redis-server on a free port (REDIS_SERVER picks the binary) unless REDIS_URL is set.
import { spawn } from "node:child_process";
import { randomUUID } from "node:crypto";
import { readFileSync } from "node:fs";
import { createServer } from "node:net";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import autocannon from "autocannon";
import { Redis } from "ioredis";

const args = process.argv.slice(2);
const option = (name, fallback) => {
  const at = args.indexOf(name);
  return at === -1 ? fallback : Number(args[at + 1]);
};
const compare = args.includes("--compare");
const positional = args.filter((arg, i) => !arg.startsWith("--") && !args[i - 1]?.startsWith("--"));
const seconds = Number(positional[0] ?? (compare ? 15 : 600));
const instances = option("--instances", 3);
const connections = option("--connections", 16);
const retentionMs = option("--retention-ms", 30_000);
const sampleSeconds = option("--sample", 15);

const packageDir = fileURLToPath(new URL("..", import.meta.url));
const TICKS_PER_SECOND = 100; // Linux USER_HZ: /proc/<pid>/stat counts CPU time in these.

/** CPU seconds (user + system) a process has used, from /proc. */
function cpuSeconds(pid) {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return (Number(fields[11]) + Number(fields[12])) / TICKS_PER_SECOND;
}
/** Resident memory of a process in MiB, from /proc. */
function rssMiB(pid) {
  const match = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, "utf8"));
  return match ? Number(match[1]) / 1024 : Number.NaN;
}

function freePort() {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once("error", reject);
    probe.listen(0, "127.0.0.1", () => {
      const { port } = probe.address();
      probe.close(() => resolve(port));
    });
  });
}

/** Our own redis-server, persistence off; or the one at REDIS_URL. */
async function startRedis() {
  if (process.env.REDIS_URL) {
    return { url: process.env.REDIS_URL, pid: undefined, stop: async () => {} };
  }
  const port = await freePort();
  const child = spawn(
    process.env.REDIS_SERVER || "redis-server",
    ["--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--loglevel", "warning"],
    { stdio: "ignore" },
  );
  await new Promise((resolve, reject) => {
    child.once("error", () =>
      reject(new Error("redis-server not found: install it with `apt-get install redis-server`")),
    );
    child.once("spawn", resolve);
  });
  const url = `redis://127.0.0.1:${port}`;
  // Until it listens, connections are refused: retry every 50 ms until the first ready.
  const probe = new Redis(url, { retryStrategy: () => 50 });
  probe.on("error", () => {});
  await new Promise((resolve) => probe.once("ready", resolve));
  probe.disconnect();
  return {
    url,
    pid: child.pid,
    stop: async () => {
      child.kill("SIGKILL");
      await new Promise((resolve) => child.once("exit", resolve));
    },
  };
}

/** A server process (bench/instance.ts under tsx, on the sources); resolves with its URL and pid. */
async function startInstance(redisUrl) {
  const child = spawn(
    process.execPath,
    [
      "--import",
      "tsx",
      "bench/instance.ts",
      ...(redisUrl ? ["--redis", redisUrl] : []),
      "--retention-ms",
      String(retentionMs),
    ],
    { cwd: packageDir, stdio: ["ignore", "pipe", "inherit"], env: { ...process.env, NODE_ENV: "production" } },
  );
  const [url] = await Promise.race([
    (async () => {
      for await (const line of createInterface({ input: child.stdout })) {
        return [line];
      }
      throw new Error("the instance exited before listening");
    })(),
    new Promise((_, reject) => child.once("exit", (code) => reject(new Error(`instance exited (${code})`)))),
  ]);
  return {
    url,
    pid: child.pid,
    stop: async () => {
      child.kill("SIGTERM");
      await new Promise((resolve) => child.once("exit", resolve));
    },
  };
}

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

const mib = (bytes) => (Number(bytes) / 1024 / 1024).toFixed(1);
const pad = (value, width) => String(value).padStart(width);

async function soak() {
  const redis = await startRedis();
  const servers = await Promise.all(Array.from({ length: instances }, () => startInstance(redis.url)));
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
    const memory = await admin.info("memory");
    const field = (name) => new RegExp(`^${name}:(\\d+)`, "m").exec(memory)?.[1] ?? "0";
    const row = [
      pad(Math.round((Date.now() - started) / 1000), 6),
      ...servers.map((server) => pad(rssMiB(server.pid).toFixed(1), 13)),
      pad(mib(field("used_memory")), 14),
      pad(mib(field("used_memory_rss")), 13),
      pad(await admin.dbsize(), 7),
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
  const onRedis = await Promise.all(Array.from({ length: instances }, () => startInstance(redis.url)));
  rows.push(await phase(`${instances} instances, Redis, new call_ids`, onRedis, redis.pid));
  rows.push(await phase(`${instances} instances, Redis, replays`, onRedis, redis.pid, { replay: true }));
  await Promise.all(onRedis.map((server) => server.stop()));
  const inMemory = [await startInstance(undefined)];
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

await (compare ? compareMode() : soak());
