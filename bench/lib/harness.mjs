/** What the benchmark scripts share: core pinning, server children driven over IPC, and one measured load window. */
import { spawn, spawnSync } from "node:child_process";
import { once } from "node:events";
import os from "node:os";
import { fileURLToPath } from "node:url";
import autocannon from "autocannon";

const CHILD = fileURLToPath(new URL("../child.mjs", import.meta.url));

/**
 * Pins this process (the load generator) to core 0 and returns the spawn prefix that puts servers on core 1,
 * or explains why it did not: no `taskset`, or fewer than 2 cores.
 */
export function pinCores() {
  if (os.availableParallelism() < 2) {
    return { pinned: false, prefix: [], why: "fewer than 2 cores: not pinned" };
  }
  const cores = os.availableParallelism();
  const probe = spawnSync("taskset", ["-a", "-cp", "0", String(process.pid)], { stdio: "ignore" });
  if (probe.error || probe.status !== 0) {
    return { pinned: false, prefix: [], why: "taskset not available: load generator and servers share the cores" };
  }
  return {
    pinned: true,
    prefix: ["taskset", "-c", "1"],
    /** Children inherit this process's core: servers start on every core, then move. */
    startPrefix: ["taskset", "-c", `0-${cores - 1}`],
    /** Moves a running process, every thread of it, to the servers' core. */
    pin: (pid) => spawnSync("taskset", ["-a", "-cp", "1", String(pid)], { stdio: "ignore" }).status === 0,
    why: "load generator (autocannon, this process) on core 0, every server on core 1 (taskset)",
  };
}

/** Runs `command args` behind the pinning prefix, if any. */
export function spawnPinned(pinning, command, args, options) {
  const [head, ...rest] = [...pinning.prefix, command, ...args];
  return spawn(head, rest, options);
}

const live = new Set();
const killAll = () => {
  for (const child of live) {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill("SIGKILL");
    }
  }
};
process.on("exit", killAll);
for (const signal of ["SIGINT", "SIGTERM"]) {
  process.once(signal, () => {
    killAll();
    process.exit(130);
  });
}

/** Tracks a child this process started, so it dies with us whatever happens. */
export function track(child) {
  live.add(child);
  child.once("exit", () => live.delete(child));
  return child;
}

/**
 * Starts `bench/child.mjs` with a stack module and its config (see bench/stacks), standard output to /dev/null
 * (our servers log one JSON line per call there, as when it is piped). Resolves once it listens, pinned to the
 * servers' core: it starts on any core, so that servers start in parallel.
 */
export async function startServer(pinning, config, { nodeArgs = [], timeoutMs = 30_000, stdio = false } = {}) {
  const [command, ...args] = [
    ...(pinning.startPrefix ?? []),
    process.execPath,
    ...nodeArgs,
    CHILD,
    JSON.stringify(config),
  ];
  // A stdio server's pipes are its protocol (lib/stdio.mjs drives them).
  const pipes = stdio ? ["pipe", "pipe", "pipe", "ipc"] : ["ignore", "ignore", "pipe", "ipc"];
  const child = track(spawn(command, args, { stdio: pipes }));
  let stderr = "";
  child.stderr.on("data", (chunk) => {
    stderr = (stderr + chunk).slice(-4_000);
  });
  const pending = new Map();
  let nextId = 0;
  const ready = new Promise((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`${config.stack} did not start within ${timeoutMs} ms`)),
      timeoutMs,
    );
    child.on("message", (message) => {
      if (message?.type === "ready") {
        clearTimeout(timer);
        resolve(message);
      } else if (message?.type === "usage") {
        pending.get(message.id)?.(message);
        pending.delete(message.id);
      }
    });
    child.once("exit", (code, signal) => {
      clearTimeout(timer);
      reject(new Error(`${config.stack} exited (${code ?? signal}): ${stderr.trim() || "no stderr"}`));
    });
  });
  const { url, note, pids = [] } = await ready;
  // A stack of several processes (the MCP bridge and its OXP server) names the others: all go to the servers' core.
  for (const pid of [child.pid, ...pids]) {
    if (pinning.pinned && !pinning.pin(pid)) {
      throw new Error(`taskset could not move ${config.stack} (${pid}) to core 1`);
    }
  }
  return {
    url,
    note,
    child,
    stderr: () => stderr,
    /** The server's own CPU time (µs), peak RSS (KB) and heap in use (bytes; after a full collection with `gc`). */
    usage: ({ gc = false } = {}) =>
      new Promise((resolve) => {
        const id = nextId++;
        pending.set(id, resolve);
        child.send({ type: "usage", id, gc });
      }),
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) {
        return;
      }
      const exited = once(child, "exit");
      child.send({ type: "exit" });
      const timer = setTimeout(() => child.kill("SIGKILL"), 5_000);
      await exited;
      clearTimeout(timer);
    },
  };
}

/** A server's CPU time (µs) in a `usage` answer. */
export const cpuMicros = (usage) => usage.cpu.user + usage.cpu.system;

/**
 * Each process's CPU per response over a window, for a stack of several (`parts`: the MCP bridge's own and its OXP
 * server's); undefined for a stack of one.
 */
export function partsPerResponse(before, after, responses) {
  if (!before.parts || !after.parts || responses === 0) {
    return undefined;
  }
  const micros = (part) => part.user + part.system;
  return Object.fromEntries(
    Object.keys(after.parts).map((name) => [
      name,
      (micros(after.parts[name]) - micros(before.parts[name])) / responses,
    ]),
  );
}

/**
 * One measured window: autocannon against `server` for `seconds`, the server's CPU read before and after.
 * `expectStatus` is the status every answer should have; anything else counts as an error.
 */
export async function measure(server, request, { seconds, connections, expectStatus }) {
  const before = await server.usage();
  const started = performance.now();
  const result = await autocannon({
    url: `${server.url}${request.path}`,
    method: request.method,
    headers: request.headers,
    body: request.body,
    // A request that must differ each time (a fresh call_id, a new token) makes its body or headers per request.
    ...(request.bodyFor || request.headersFor
      ? {
          requests: [
            {
              setupRequest: (sent) => ({
                ...sent,
                ...(request.bodyFor ? { body: request.bodyFor() } : {}),
                ...(request.headersFor ? { headers: request.headersFor() } : {}),
              }),
            },
          ],
        }
      : {}),
    connections,
    duration: seconds,
    // autocannon stops on its sampling tick (1 s by default): a short tick ends the window on time.
    sampleInt: 50,
  });
  const wallS = (performance.now() - started) / 1000;
  const after = await server.usage();
  let responses = 0;
  let expected = 0;
  for (const [status, { count }] of Object.entries(result.statusCodeStats ?? {})) {
    responses += Number(count);
    if (Number(status) === expectStatus) {
      expected += Number(count);
    }
  }
  const partsUs = partsPerResponse(before, after, responses);
  return {
    rps: responses / wallS,
    ...(partsUs ? { partsUs } : {}),
    p50: result.latency.p50,
    p99: result.latency.p99,
    cpuUs: responses > 0 ? (cpuMicros(after) - cpuMicros(before)) / responses : Number.NaN,
    rssMb: after.maxRssKb / 1024,
    responses,
    errors: responses - expected + result.errors + result.timeouts,
  };
}

/**
 * Resolves once `server` has stopped working (under a fifth of a core over 100 ms), or `timeoutMs` later. A window
 * ends with each connection's last request unanswered: a server that takes a tenth of a second per answer would
 * spend the next windows (its own and those of the other servers on its core) on that backlog.
 */
export async function settled(server, { timeoutMs = 60_000 } = {}) {
  const QUIET_MS = 100;
  const until = performance.now() + timeoutMs;
  let last = cpuMicros(await server.usage());
  while (performance.now() < until) {
    await new Promise((resolve) => setTimeout(resolve, QUIET_MS));
    const now = cpuMicros(await server.usage());
    if (now - last < QUIET_MS * 200) {
      return;
    }
    last = now;
  }
}

/** The median of finite numbers (NaN when there are none). */
export function median(values) {
  const sorted = values.filter(Number.isFinite).sort((a, b) => a - b);
  if (sorted.length === 0) {
    return Number.NaN;
  }
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2;
}
