// What the tasks extension costs (docs/protocol.md 9.3), measured side by side in one run against one server process:
// a call made asynchronously and polled to its end against the same call made synchronously; how long a 202 takes
// without a wait; the CPU per event of an event stream of 1,000 progress updates; and 9,900 asynchronous calls held
// by 99 principals (memory per call, and whether a 100th principal still gets in).
// Usage: `npm run bench:tasks` or `node bench/tasks.mjs [--quick]`.
// Writes bench/results/tasks.md (or tasks-quick.md); exits 1 only when the server answers wrongly.
import { writeFileSync } from "node:fs";
import os from "node:os";
import { median, pinCores, startServer } from "./lib/harness.mjs";
import { BENCH_KEYS } from "./stacks/ours-tasks.mjs";

const QUICK = process.argv.includes("--quick");
const ROUNDS = QUICK ? 1 : 5;
const CALLS = QUICK ? 200 : 2_000;
const CONCURRENCY = 50;
const STREAMS = QUICK ? 3 : 20;
const ACCEPTS = QUICK ? 50 : 200;
const STEPS = 1_000;
const HELD_PRINCIPALS = QUICK ? 9 : 99;
const HELD_PER_PRINCIPAL = 100;
const OUT = new URL(`./results/${QUICK ? "tasks-quick" : "tasks"}.md`, import.meta.url);

const pinning = pinCores();
const server = await startServer(pinning, { stack: "ours-tasks" }, { nodeArgs: ["--expose-gc"] });
const log = (line) => process.stderr.write(`${line}\n`);
// A request the server broke off: say what the server said before it went.
process.on("uncaughtException", (error) => {
  log(`bench: ${error.stack ?? error}${error.cause ? `\ncause: ${error.cause}` : ""}`);
  log(
    `bench: the server ${server.child.exitCode !== null || server.child.signalCode !== null ? "has exited" : "is still up"}; its stderr:\n${server.stderr()}`,
  );
  process.exit(1);
});

/** One request; its status, headers and parsed body. */
async function send(path, { method = "GET", headers = {}, body } = {}) {
  const reply = await fetch(`${server.url}${path}`, {
    method,
    headers: body === undefined ? headers : { "content-type": "application/json", ...headers },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  const text = await reply.text();
  const json = reply.headers.get("content-type")?.startsWith("application/json") && text !== "";
  return { status: reply.status, headers: reply.headers, text, body: json ? JSON.parse(text) : undefined };
}

const as = (index, extra = {}) => ({ "oxp-api-key": BENCH_KEYS[index], ...extra });
const TASKS = { "oxp-extensions": "tasks" };
const fail = (what, reply) => {
  log(`bench: ${what}: ${reply.status} ${reply.text.slice(0, 300)}`);
  process.exit(1);
};

/** A synchronous call of Bench.Wait. */
async function syncCall() {
  const reply = await send("/tools/call", { method: "POST", headers: as(0), body: { tool_id: "Bench.Wait" } });
  if (reply.status !== 200 || reply.body.value !== 5) {
    fail("a synchronous call", reply);
  }
}

/** The same call made asynchronously (202), then polled with wait=N until it has ended. */
async function asyncCall() {
  const accepted = await send("/tools/call", {
    method: "POST",
    headers: as(0, { ...TASKS, prefer: "respond-async" }),
    body: { tool_id: "Bench.Wait" },
  });
  // A busy server may see the call end before it answers: a 200 is the protocol's answer then.
  if (accepted.status === 200 && accepted.body.value === 5) {
    return;
  }
  if (accepted.status !== 202) {
    fail("an asynchronous call", accepted);
  }
  for (;;) {
    const status = await send(`/tools/calls/${accepted.body.call_id}`, {
      headers: as(0, { ...TASKS, prefer: "wait=5" }),
    });
    if (status.status !== 200) {
      fail("a status", status);
    }
    if (status.body.status !== "running") {
      if (status.body.result?.value !== 5) {
        fail("an asynchronous result", status);
      }
      return;
    }
  }
}

/** Milliseconds from sending an asynchronous call without a wait to its 202 (the tool runs on for 20 ms). */
async function acceptLatency() {
  const started = performance.now();
  const accepted = await send("/tools/call", {
    method: "POST",
    headers: as(0, { ...TASKS, prefer: "respond-async" }),
    body: { tool_id: "Bench.Wait" },
  });
  const ms = performance.now() - started;
  if (accepted.status !== 202) {
    fail("an asynchronous call without a wait", accepted);
  }
  return ms;
}

/** `count` runs of `one`, `CONCURRENCY` at a time; the server's CPU per run (µs). */
async function cpuPer(one, count) {
  const before = await server.usage();
  let next = 0;
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next++ < count) {
        await one();
      }
    }),
  );
  const after = await server.usage();
  return (after.cpu.user + after.cpu.system - before.cpu.user - before.cpu.system) / count;
}

/**
 * A Bench.Chatter call of STEPS updates read through its event stream; or, without, the same call with nobody
 * following it (the POST waits for its end: wait=30), the baseline the stream's cost is measured against.
 */
async function chatter(withStream) {
  const accepted = await send("/tools/call", {
    method: "POST",
    headers: as(1, { ...TASKS, prefer: withStream ? "respond-async" : "respond-async, wait=30" }),
    body: { tool_id: "Bench.Chatter", input: { steps: STEPS } },
  });
  if (!withStream) {
    if (accepted.status !== 200 || accepted.body.value !== STEPS) {
      fail("a chatter call", accepted);
    }
    return 0;
  }
  if (accepted.status !== 202) {
    fail("a chatter call", accepted);
  }
  const stream = await send(`/tools/calls/${accepted.body.call_id}/events`, { headers: as(1, TASKS) });
  const events = stream.text.split("\n\n").filter((block) => block.includes("event: progress")).length;
  if (!stream.text.includes("event: result")) {
    fail("an event stream", stream);
  }
  return events;
}

// ---- 1 and 2: CPU, interleaved rounds ----------------------------------------------------------------------------
await cpuPer(syncCall, 200);
await cpuPer(asyncCall, 200);
const rows = { sync: [], async: [], streamed: [], unstreamed: [], events: [], accept: [] };
for (let round = 0; round < ROUNDS; round++) {
  const order = round % 2 === 0 ? ["sync", "async"] : ["async", "sync"];
  for (const kind of order) {
    rows[kind].push(await cpuPer(kind === "sync" ? syncCall : asyncCall, CALLS));
  }
  let events = 0;
  rows.streamed.push(
    await cpuPer(async () => {
      events += await chatter(true);
    }, STREAMS),
  );
  rows.events.push(events / STREAMS);
  rows.unstreamed.push(await cpuPer(() => chatter(false), STREAMS));
  // One at a time, so that each is a latency and not a queue; the calls left running end 20 ms after.
  const latencies = [];
  for (let i = 0; i < ACCEPTS; i++) {
    latencies.push(await acceptLatency());
  }
  rows.accept.push(median(latencies));
  await new Promise((resolve) => setTimeout(resolve, 50));
  log(`bench: round ${round + 1}: sync ${rows.sync.at(-1).toFixed(1)} us, async ${rows.async.at(-1).toFixed(1)} us`);
}
const ratios = rows.async.map((cpu, i) => cpu / rows.sync[i]);
const perEvent = rows.streamed.map((cpu, i) => (cpu - rows.unstreamed[i]) / rows.events[i]);

// ---- 3: held calls -----------------------------------------------------------------------------------------------
const quiet = await server.usage({ gc: true });
const held = [];
for (let principal = 2; principal < 2 + HELD_PRINCIPALS; principal++) {
  await Promise.all(
    Array.from({ length: HELD_PER_PRINCIPAL }, async () => {
      const reply = await send("/tools/call", {
        method: "POST",
        headers: as(principal, { ...TASKS, prefer: "respond-async" }),
        body: { tool_id: "Bench.Hold" },
      });
      if (reply.status !== 202) {
        fail("a held call", reply);
      }
      held.push([principal, reply.body.call_id]);
    }),
  );
}
const loaded = await server.usage({ gc: true });
const bytesPerCall = (loaded.heapUsed - quiet.heapUsed) / held.length;
const full = await send("/tools/call", {
  method: "POST",
  headers: as(2, { ...TASKS, prefer: "respond-async" }),
  body: { tool_id: "Bench.Hold" },
});
// Principal 1 ran the streamed calls, all ended: it holds none (the held ones are 2 ... 2 + HELD_PRINCIPALS - 1).
const fresh = await send("/tools/call", {
  method: "POST",
  headers: as(1, { ...TASKS, prefer: "respond-async" }),
  body: { tool_id: "Bench.Hold" },
});
const started = performance.now();
await syncCall();
const syncLatency = performance.now() - started;
for (let i = 0; i < held.length; i += CONCURRENCY) {
  await Promise.all(
    held
      .slice(i, i + CONCURRENCY)
      .map(([principal, id]) => send(`/tools/calls/${id}`, { method: "DELETE", headers: as(principal, TASKS) })),
  );
}
await server.stop();

// ---- report ------------------------------------------------------------------------------------------------------
const figure = (value, digits = 1) => value.toFixed(digits);
const markdown = [
  "# The tasks extension's costs",
  "",
  `- Date: ${new Date().toISOString()}`,
  `- Machine: ${os.cpus()[0]?.model ?? "unknown CPU"}, ${os.cpus().length} cores; Node ${process.version}; ${pinning.why}`,
  `- One server process (createHandler + listen, API keys, fair share off), CPU read inside it; ${ROUNDS} interleaved round(s), medians`,
  "",
  "| figure | value |",
  "| --- | ---: |",
  `| synchronous call of a 20 ms tool, CPU per call | ${figure(median(rows.sync))} us |`,
  `| the same call asynchronously (202, then status with wait=5 until it ended), CPU per call | ${figure(median(rows.async))} us |`,
  `| asynchronous against synchronous, CPU per call | ${figure(median(ratios), 2)}x |`,
  `| an asynchronous call without a wait (\`Prefer: respond-async\`), latency to its 202 (median, one at a time) | ${figure(median(rows.accept), 2)} ms |`,
  `| event stream of ${STEPS} progress updates (all kept): events received per call | ${figure(median(rows.events), 0)} |`,
  `| CPU per progress event streamed (the streamed call minus the same call followed by nobody) | ${figure(median(perEvent), 2)} us |`,
  `| ${held.length.toLocaleString("en")} asynchronous calls held by ${HELD_PRINCIPALS} principals: heap per call | ${figure(bytesPerCall / 1024, 2)} KiB |`,
  `| their heap in all, after a full collection | ${figure((loaded.heapUsed - quiet.heapUsed) / 2 ** 20)} MiB |`,
  `| a principal at its 100 calls asks for one more | ${full.status} |`,
  `| a principal holding none asks, while ${held.length.toLocaleString("en")} run | ${fresh.status} |`,
  `| a synchronous call meanwhile, latency | ${figure(syncLatency)} ms |`,
  "",
].join("\n");
writeFileSync(OUT, markdown);
process.stdout.write(markdown);
if (full.status !== 429 || fresh.status !== 202) {
  log("bench: the bounds did not hold");
  process.exit(1);
}
