/**
 * MCP servers over stdio under load: a server child (bench/child.mjs with `transport: "stdio"`) driven through its
 * pipes, newline-delimited JSON-RPC with a fixed number of requests in flight (autocannon's connections, for a
 * transport without any), its CPU read over IPC as for the HTTP servers.
 */
import { createInterface } from "node:readline";
import { cpuMicros, partsPerResponse, startServer } from "./harness.mjs";

/**
 * Starts a stack's `startStdio` in its own process, pinned as startServer pins (the process and the `pids` it names);
 * resolves with the harness's server shape (`usage`, `stop`), plus `send(message)`, a request answered by the
 * server's JSON-RPC answer.
 */
export async function startStdioServer(pinning, config, options = {}) {
  const server = await startServer(pinning, { ...config, transport: "stdio" }, { ...options, stdio: true });
  const answers = new Map();
  createInterface({ input: server.child.stdout }).on("line", (line) => {
    let message;
    try {
      message = JSON.parse(line);
    } catch {
      return;
    }
    answers.get(message.id)?.(message);
    answers.delete(message.id);
  });
  let nextId = 1;
  return {
    ...server,
    url: "stdio:",
    /** Sends `message` with an id of its own; resolves with the answer to it. */
    send(message) {
      const id = nextId++;
      const answered = new Promise((resolve) => answers.set(id, resolve));
      server.child.stdin.write(`${JSON.stringify({ ...message, id })}\n`);
      return answered;
    },
  };
}

/**
 * One measured window over stdio: `message` sent again as each answer comes, `inFlight` at a time, for `seconds`;
 * the figures of harness.mjs's `measure` (latency percentiles from each request's round trip). An answer that `check`
 * refuses (it returns a problem) counts as an error.
 */
export async function measureStdio(server, message, { seconds, inFlight, check }) {
  const before = await server.usage();
  const started = performance.now();
  const until = started + seconds * 1000;
  const latencies = [];
  let errors = 0;
  await Promise.all(
    Array.from({ length: inFlight }, async () => {
      while (performance.now() < until) {
        const sent = performance.now();
        const answer = await server.send(message);
        latencies.push(performance.now() - sent);
        if (check(answer)) {
          errors++;
        }
      }
    }),
  );
  const wallS = (performance.now() - started) / 1000;
  const after = await server.usage();
  const responses = latencies.length;
  latencies.sort((a, b) => a - b);
  const at = (q) => latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))] ?? Number.NaN;
  const partsUs = partsPerResponse(before, after, responses);
  return {
    rps: responses / wallS,
    ...(partsUs ? { partsUs } : {}),
    p50: at(0.5),
    p99: at(0.99),
    cpuUs: responses > 0 ? (cpuMicros(after) - cpuMicros(before)) / responses : Number.NaN,
    rssMb: after.maxRssKb / 1024,
    responses,
    errors,
  };
}
