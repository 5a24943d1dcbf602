// What the soaks share: a redis-server and bench server processes to run, and their CPU and memory read from /proc.
import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { createServer } from "node:net";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import { Redis } from "ioredis";

const packageDir = fileURLToPath(new URL("..", import.meta.url));
const TICKS_PER_SECOND = 100; // Linux USER_HZ: /proc/<pid>/stat counts CPU time in these.

/** CPU seconds (user + system) a process has used, from /proc. */
export function cpuSeconds(pid) {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  return (Number(fields[11]) + Number(fields[12])) / TICKS_PER_SECOND;
}

/** Resident memory of a process in MiB, from /proc. */
export function rssMiB(pid) {
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
export async function startRedis() {
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

/**
 * A server process (bench/instance.ts under tsx, on the sources), its call_ids in Redis at `redisUrl` (in memory
 * without one) and kept `retentionMs`; resolves with its URL and pid (the pid its tools run in).
 */
export async function startInstance(redisUrl, retentionMs) {
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

/** Redis's used memory and RSS (bytes) from INFO memory, and its key count. */
export async function redisMemory(admin) {
  const memory = await admin.info("memory");
  const field = (name) => Number(new RegExp(`^${name}:(\\d+)`, "m").exec(memory)?.[1] ?? 0);
  return { used: field("used_memory"), rss: field("used_memory_rss"), keys: await admin.dbsize() };
}

/** Bytes as MiB with one decimal. */
export const mib = (bytes) => (Number(bytes) / 1024 / 1024).toFixed(1);
/** A table cell: the value right-aligned in `width` characters. */
export const pad = (value, width) => String(value).padStart(width);
