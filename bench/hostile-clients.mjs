// Hostile clients against the demo Tool Server: memory, CPU and idempotency attacks measured side by side with legitimate traffic.
// Usage: `npm run bench:hostile` or `node bench/hostile-clients.mjs [SECONDS=60] [--demo PATH/TO/apps/demo/dist/main.js]
// [--flood N=12000] [--heap MB] [--adapter node|express|node,express] [--only PHASE,...]`. SECONDS per attack (5 is a smoke run);
// not part of `npm test`. Each phase starts the demo server as its own child process (RSS is its own), loads it over
// loopback, bounded in time, and kills it after. Attackers call from 127.0.0.2 (the whole 127.0.0.0/8 is loopback),
// legitimate traffic from 127.0.0.1: with authentication off the server tells clients apart by address.
// The issue-34 phases (f1-*, f4) attack from up to 16 addresses (127.0.0.2 to 127.0.0.17): a few addresses filling
// the server's connections, then a fresh legitimate client; the same costly load from 1 address and from 8.
// It measures and reports; it exits 0 whatever it finds, non-zero only when the bench itself fails.
import { spawn } from "node:child_process";
import { once, setMaxListeners } from "node:events";
import { readFileSync } from "node:fs";
import http from "node:http";
import net from "node:net";
import os from "node:os";
import { fileURLToPath } from "node:url";
import autocannon from "autocannon";
import { SignJWT } from "jose";

// ---- options ---------------------------------------------------------------------------------------------------
const argv = process.argv.slice(2);
const flag = (name) => {
  const at = argv.indexOf(name);
  if (at === -1) {
    return undefined;
  }
  const value = argv[at + 1];
  argv.splice(at, 2);
  if (value === undefined) {
    throw new Error(`${name} needs a value`);
  }
  return value;
};
const DEMO = flag("--demo") ?? fileURLToPath(new URL("../apps/demo/dist/main.js", import.meta.url));
const FLOOD_MIN = Number(flag("--flood") ?? 12_000);
const HEAP_MB = flag("--heap");
/** `--adapter node,express` runs every phase on each, one after the other, in one run. */
const ADAPTERS = (flag("--adapter") ?? "node").split(",");
/** The adapter of the phases running now. */
let ADAPTER = ADAPTERS[0];
const ONLY = flag("--only")?.split(",");
const PHASES = [
  "baseline",
  "memory",
  "challenges",
  "cpu",
  "idempotency",
  "wide",
  "orphans",
  "challenge-fill",
  "slowloris",
  "f1-burst",
  "f1-held",
  "f1-polls",
  "f1-slowloris",
  "f4",
];
if (!ADAPTERS.every((adapter) => ["node", "express"].includes(adapter))) {
  throw new Error("--adapter is node, express, or both (node,express)");
}
for (const name of ONLY ?? []) {
  if (!PHASES.includes(name)) {
    throw new Error(`--only takes ${PHASES.join(", ")}`);
  }
}
/** Whether a phase runs (all of them unless --only names some; the baseline always). */
const runs = (name) => name === "baseline" || !ONLY || ONLY.includes(name);
/** Where attackers call from: another loopback address than the legitimate load's. */
const ATTACKER_ADDRESS = "127.0.0.2";
const DURATION_S = Number(argv[0] ?? 60);
if (!(DURATION_S > 0) || !(FLOOD_MIN > 0)) {
  throw new Error("usage: node bench/hostile-clients.mjs [SECONDS] [--demo PATH]");
}
const HALF_S = Math.max(3, Math.round(DURATION_S / 2));

const CONNECTIONS = 16; // legitimate load, as in server-throughput.mjs
const SAMPLE_MS = 500;
const NAME_CHARS = 1_000_000; // Greeting.Hello name: the body stays under the 1 MiB limit
const VERSION_DIGITS = 1_040_000; // "Greeting.Hello@999...": a version number BigInt has to parse
const SLEEP_MS = 8_000;
const STORE_SIZE = 10_000; // the default MemoryIdempotencyStore bound the flood has to exceed
const RUN = `${process.pid}-${Date.now().toString(36)}`;

const json = (body) => ({
  method: "POST",
  path: "/tools/call",
  headers: { "content-type": "application/json" },
  body: JSON.stringify(body),
});
const LEGIT = json({ tool_id: "Calculator.Add", input: { a: 1, b: 2 } });

// ---- the server under test, as a child process -----------------------------------------------------------------
const children = new Set();
const killAll = () => {
  for (const child of children) {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill("SIGKILL");
    }
  }
};
process.on("exit", killAll);
for (const signal of ["SIGINT", "SIGTERM"]) {
  process.on(signal, () => {
    killAll();
    console.error(`\ninterrupted (${signal}): server children killed`);
    process.exit(130);
  });
}

/** A secret for the phases that authenticate clients: each JWT `sub` is then a principal of its own. */
const JWT_SECRET = `hostile-bench-${RUN}-0123456789abcdef`;
/** `Authorization` headers for principal `sub`, valid for 14 minutes (the server allows 15). */
const bearer = async (sub) => ({
  authorization: `Bearer ${await new SignJWT({ sub })
    .setProtectedHeader({ alg: "HS256" })
    .setExpirationTime("14m")
    .sign(new TextEncoder().encode(JWT_SECRET))}`,
});

async function startServer({ auth = false } = {}) {
  const args = HEAP_MB ? [`--max-old-space-size=${HEAP_MB}`, DEMO] : [DEMO];
  const child = spawn(process.execPath, args, {
    env: {
      ...process.env,
      PORT: "0",
      HOST: "127.0.0.1",
      LOG_LEVEL: "silent",
      OXP_ADAPTER: ADAPTER,
      ...(auth ? { OXP_JWT_SECRET: JWT_SECRET } : {}),
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  children.add(child);
  const server = {
    child,
    pid: child.pid,
    stderr: "",
    stderrHead: "",
    exit: undefined,
    stopping: false,
    started: Date.now(),
    /** Headers of the legitimate load: a principal of its own when the phase authenticates. */
    legitHeaders: auth ? await bearer("legit") : {},
  };
  child.stderr.on("data", (chunk) => {
    if (server.stderrHead.length < 1_000) {
      server.stderrHead += chunk;
    }
    server.stderr = (server.stderr + chunk).slice(-3_000);
  });
  child.on("exit", (code, signal) => {
    server.exit = { code, signal, at: Date.now() };
    children.delete(child);
  });
  server.url = await new Promise((resolve, reject) => {
    let out = "";
    const cleanup = () => {
      clearTimeout(timer);
      child.off("exit", onExit);
      child.off("error", fail);
      child.stdout.off("data", onData);
    };
    const fail = (error) => {
      cleanup();
      child.kill("SIGKILL");
      reject(new Error(`${error.message}\n  demo: ${DEMO}\n  stderr: ${server.stderr.trim() || "(empty)"}`));
    };
    const onExit = (code, signal) => fail(new Error(`the demo server exited at start (${code ?? signal})`));
    const onData = (chunk) => {
      out += chunk;
      const match = /listening on (http:\/\/\S+)/.exec(out);
      if (match) {
        cleanup();
        resolve(match[1]);
      }
    };
    const timer = setTimeout(() => fail(new Error("the demo server did not print its URL within 20 s")), 20_000);
    child.on("exit", onExit);
    child.on("error", fail);
    child.stdout.on("data", onData);
  });
  child.stdout.resume();
  return server;
}

async function stopServer(server) {
  if (server.exit) {
    return;
  }
  server.stopping = true;
  const exited = once(server.child, "exit");
  server.child.kill("SIGTERM");
  const timer = setTimeout(() => server.child.kill("SIGKILL"), 3_000);
  await exited;
  clearTimeout(timer);
}

// ---- measuring the child: RSS and CPU every 500 ms, plus answers per bucket ------------------------------------
const CLK_TCK = 100; // Linux USER_HZ
function readProc(pid) {
  try {
    const status = readFileSync(`/proc/${pid}/status`, "utf8");
    const rssKb = Number(/VmRSS:\s+(\d+)/.exec(status)?.[1]);
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return { rssMb: rssKb / 1024, cpuS: (Number(fields[11]) + Number(fields[12])) / CLK_TCK };
  } catch {
    return undefined; // gone, or no /proc (then see ps below)
  }
}
async function readPs(pid) {
  const child = spawn("ps", ["-o", "rss=", "-p", String(pid)], { stdio: ["ignore", "pipe", "ignore"] });
  let out = "";
  child.stdout.on("data", (chunk) => {
    out += chunk;
  });
  await once(child, "close");
  const kb = Number(out.trim());
  return kb > 0 ? { rssMb: kb / 1024, cpuS: Number.NaN } : undefined;
}

class Monitor {
  constructor(server) {
    this.server = server;
    this.t0 = Date.now();
    this.buckets = [];
    this.first = readProc(server.pid);
    this.samples = [];
    this.timer = setInterval(() => this.sample(), SAMPLE_MS);
    this.sample();
  }
  bucket(now = Date.now()) {
    const i = Math.floor((now - this.t0) / SAMPLE_MS);
    for (let j = this.buckets.length; j <= i; j++) {
      this.buckets.push({ legit: 0, attack: 0 });
    }
    return this.buckets[i];
  }
  legit() {
    this.bucket().legit++;
  }
  attack() {
    this.bucket().attack++;
  }
  async sample() {
    if (this.server.exit) {
      return;
    }
    const at = Date.now();
    const proc = readProc(this.server.pid) ?? (await readPs(this.server.pid));
    if (proc) {
      this.samples.push({ t: (at - this.t0) / 1000, ...proc });
    }
  }
  stop() {
    clearInterval(this.timer);
    this.seconds = (Date.now() - this.t0) / 1000;
  }
  summary() {
    const rss = this.samples.map((s) => s.rssMb);
    const last = this.samples.at(-1);
    const first = this.samples[0];
    return {
      start: first?.rssMb,
      peak: Math.max(...rss),
      end: last?.rssMb,
      cpu: last && first ? (last.cpuS - first.cpuS) / Math.max(0.001, last.t - first.t) : Number.NaN,
    };
  }
  /** Rows every `step` seconds: RSS at the end of the step, CPU share and answers per second over the step. */
  timeline(step) {
    const rows = [];
    const per = Math.round((step * 1000) / SAMPLE_MS);
    const count = Math.max(1, Math.round(this.seconds / step)); // a short tail joins the last row
    for (let k = 1; k <= count; k++) {
      const from = (k - 1) * step;
      const to = k === count ? this.seconds : k * step;
      const slice = this.buckets.slice((k - 1) * per, k === count ? undefined : k * per);
      const inStep = this.samples.filter((s) => s.t >= from - 0.01 && s.t <= to + 0.01);
      const a = inStep[0];
      const b = inStep.at(-1);
      const span = Math.max(0.001, to - from);
      rows.push({
        t: to,
        rss: b?.rssMb,
        cpu: a && b && b.t > a.t ? (b.cpuS - a.cpuS) / (b.t - a.t) : Number.NaN,
        legit: slice.reduce((sum, x) => sum + x.legit, 0) / span,
        attack: slice.reduce((sum, x) => sum + x.attack, 0) / span,
      });
    }
    return rows;
  }
}

// ---- load generators -------------------------------------------------------------------------------------------
/** Legitimate traffic: autocannon, 16 connections of Calculator.Add, stopped early if the server dies. */
async function legitLoad(server, monitor, seconds, signal) {
  const request = { ...LEGIT, headers: { ...LEGIT.headers, ...server.legitHeaders } };
  const instance = autocannon({ url: server.url, connections: CONNECTIONS, duration: seconds, requests: [request] });
  instance.on("response", (_client, status) => {
    if (status >= 200 && status < 300) {
      monitor.legit();
    }
  });
  const stop = () => instance.stop();
  signal.addEventListener("abort", stop, { once: true });
  const result = await instance;
  signal.removeEventListener("abort", stop);
  return {
    rps: result["2xx"] / Math.max(0.001, result.duration),
    p50: result.latency.p50,
    p99: result.latency.p99,
    ok: result["2xx"],
    non2xx: result.non2xx,
    errors: result.errors,
    timeouts: result.timeouts,
    seconds: result.duration,
  };
}

/**
 * Autocannon as an attacker (small bodies, `[<id>]` made unique per request) until `signal` aborts; answers counted
 * by status, each told to `onAnswer`.
 */
async function cannon(server, monitor, options, { signal, onAnswer }) {
  const instance = autocannon({ url: server.url, idReplacement: true, ...options });
  let answers = 0;
  instance.on("response", (_client, status) => {
    monitor.attack();
    answers++;
    onAnswer?.(answers, status);
  });
  const stop = () => instance.stop();
  signal.addEventListener("abort", stop, { once: true });
  const result = await instance;
  signal.removeEventListener("abort", stop);
  const codes = {};
  for (const [code, { count }] of Object.entries(result.statusCodeStats)) {
    codes[code] = count;
  }
  if (result.errors - result.timeouts > 0) {
    codes.errors = result.errors - result.timeouts;
  }
  if (result.timeouts > 0) {
    codes.timeouts = result.timeouts;
  }
  return { codes, answered: answers, seconds: result.duration, p50: result.latency.p50, p99: result.latency.p99 };
}

/**
 * A hand-made attacker over node:http for large bodies: `connections` closed loops (as fast as answers come back)
 * or, with `rate`, one request every 1/rate s (open loop) with at most `maxInFlight` unanswered. `parts(i)` gives
 * the body's Buffers. Stops after `seconds`, or when `signal` aborts; what is still unanswered then is cut.
 */
async function attacker(
  server,
  monitor,
  { parts, connections = 1, rate, maxInFlight = 8, seconds, signal, localAddress = ATTACKER_ADDRESS },
) {
  const agent = new http.Agent({ keepAlive: true, maxSockets: rate ? maxInFlight : connections, localAddress });
  const stats = { sent: 0, skipped: 0, codes: {}, latencies: [] };
  const stopper = new AbortController();
  const done = () => stopper.signal.aborted;
  const end = () => stopper.abort();
  const timer = setTimeout(end, seconds * 1000);
  signal.addEventListener("abort", end, { once: true });
  if (signal.aborted) {
    end();
  }
  let inFlight = 0;
  const count = (code) => {
    stats.codes[code] = (stats.codes[code] ?? 0) + 1;
  };
  const send = () =>
    new Promise((resolve) => {
      const body = parts(stats.sent++);
      const length = body.reduce((sum, part) => sum + part.length, 0);
      const started = performance.now();
      inFlight++;
      let settled = false;
      const settle = (code) => {
        if (settled) {
          return;
        }
        settled = true;
        inFlight--;
        if (typeof code === "number") {
          monitor.attack();
          stats.latencies.push(performance.now() - started);
          count(code);
        } else {
          count(done() ? "cut at end" : code);
        }
        resolve();
      };
      const req = http.request(
        `${server.url}/tools/call`,
        {
          method: "POST",
          agent,
          signal: stopper.signal,
          timeout: 60_000,
          headers: { "content-type": "application/json", "content-length": length },
        },
        (res) => {
          res.on("data", () => {});
          res.on("end", () => settle(res.statusCode));
          res.on("error", (error) => settle(error.code ?? error.name));
          res.on("close", () => settle(res.complete ? res.statusCode : "cut"));
        },
      );
      req.on("timeout", () => req.destroy(Object.assign(new Error("timeout"), { code: "timeout" })));
      req.on("error", (error) => settle(error.code ?? error.name));
      for (const part of body.slice(0, -1)) {
        req.write(part);
      }
      req.end(body.at(-1));
    });

  if (rate) {
    const pending = new Set();
    const tick = setInterval(() => {
      if (done()) {
        return;
      }
      if (inFlight >= maxInFlight) {
        stats.skipped++;
        return;
      }
      const p = send().finally(() => pending.delete(p));
      pending.add(p);
    }, 1000 / rate);
    if (!done()) {
      await once(stopper.signal, "abort");
    }
    clearInterval(tick);
    await Promise.all(pending);
  } else {
    await Promise.all(
      Array.from({ length: connections }, async () => {
        while (!done()) {
          await send();
        }
      }),
    );
  }
  clearTimeout(timer);
  signal.removeEventListener("abort", end);
  agent.destroy();
  return { ...stats, answered: stats.latencies.length };
}

/** The `p` quantile of unsorted `values` (undefined when empty). */
const quantile = (values, p) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))];
};

/** One JSON call, for the idempotency steps: status, parsed body, timing. */
async function call(server, body, headers = {}) {
  const sent = performance.now();
  try {
    const response = await fetch(`${server.url}/tools/call`, {
      method: "POST",
      headers: { "content-type": "application/json", ...headers },
      body: JSON.stringify(body),
      signal: AbortSignal.timeout(60_000),
    });
    const text = await response.text();
    return { status: response.status, text, body: safeJson(text), sent, done: performance.now() };
  } catch (error) {
    return { status: error.cause?.code ?? error.name, text: "", body: undefined, sent, done: performance.now() };
  }
}
const safeJson = (text) => {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
};

// ---- phases ----------------------------------------------------------------------------------------------------
/**
 * Starts a fresh server, runs legitimate load (unless `legit` is false) beside `attack` for `seconds`, stops it.
 * With `fresh`, the attack (called with the server, the monitor and `{ signal, ready }`) fills the server first and
 * the legitimate client arrives once it calls `ready()` (at most 15 s later), as a new client would; the attack then
 * runs until `signal` aborts, when the legitimate load ends.
 */
async function phase(title, seconds, attack, { legit = true, auth = false, fresh = false } = {}) {
  process.stderr.write(`[${clock()}] ${title} (${seconds} s)...\n`);
  const server = await startServer({ auth });
  const monitor = new Monitor(server);
  const died = new AbortController();
  server.child.once("exit", () => {
    if (!server.stopping) {
      died.abort();
    }
  });
  let legitRun;
  let attackRun;
  if (fresh) {
    const over = new AbortController();
    const stop = () => over.abort();
    died.signal.addEventListener("abort", stop, { once: true });
    let ready;
    const filled = new Promise((resolve) => {
      ready = resolve;
    });
    const guard = setTimeout(() => ready(), 15_000);
    attackRun = attack(server, monitor, { signal: over.signal, ready });
    await filled;
    clearTimeout(guard);
    legitRun = (legit ? legitLoad(server, monitor, seconds, died.signal) : Promise.resolve(undefined)).finally(stop);
  } else {
    legitRun = legit ? legitLoad(server, monitor, seconds, died.signal) : Promise.resolve(undefined);
    attackRun = attack ? attack(server, monitor, seconds, died.signal) : Promise.resolve(undefined);
  }
  const [legitResult, attackResult] = await Promise.all([legitRun, attackRun]);
  await monitor.sample();
  monitor.stop();
  const death = server.exit && !server.stopping ? { ...server.exit, at: (server.exit.at - monitor.t0) / 1000 } : null;
  const stderrTail = { head: server.stderrHead.trim(), tail: server.stderr.trim() };
  await stopServer(server);
  return {
    title,
    seconds,
    legit: legitResult,
    attack: attackResult,
    monitor,
    rss: monitor.summary(),
    death,
    stderrTail,
  };
}

const nameBuf = Buffer.from("A".repeat(NAME_CHARS));
/** Attack 1a: 1 MB Greeting.Hello names, each with a new call_id, from 4 connections as fast as they go. */
const memoryAttack = async (server, monitor, seconds, signal) => {
  const stats = await attacker(server, monitor, {
    connections: 4,
    seconds,
    signal,
    parts: (i) => [
      Buffer.from(`{"tool_id":"Greeting.Hello","call_id":"hostile-mem-${RUN}-${i}","input":{"name":"`),
      nameBuf,
      Buffer.from(`"}}`),
    ],
  });
  return { ...stats, p50: quantile(stats.latencies, 0.5), p99: quantile(stats.latencies, 0.99) };
};

/** Attack 1b: Gmail.GetEmails for a new user_id each time: every call starts an authorization challenge. */
const challengeAttack = (server, monitor, seconds, signal) =>
  cannon(
    server,
    monitor,
    {
      connections: CONNECTIONS,
      duration: seconds,
      requests: [json({ tool_id: "Gmail.GetEmails", input: {}, context: { user_id: `hostile-user-[<id>]` } })],
    },
    { signal },
  );

const versionBody = [Buffer.from(JSON.stringify({ tool_id: `Greeting.Hello@${"9".repeat(VERSION_DIGITS)}` }))];
/** Attack 2: two attackers sending a tool id with a 1,040,000-digit version, paced (rate) or back to back. */
const cpuAttack = (rate) => async (server, monitor, seconds, signal) => {
  const one = () =>
    attacker(server, monitor, {
      parts: () => versionBody,
      connections: 2,
      rate,
      maxInFlight: 8,
      seconds,
      signal,
    });
  const [a, b] = await Promise.all([one(), one()]);
  const codes = { ...a.codes };
  for (const [code, n] of Object.entries(b.codes)) {
    codes[code] = (codes[code] ?? 0) + n;
  }
  const latencies = [...a.latencies, ...b.latencies];
  return {
    codes,
    sent: a.sent + b.sent,
    skipped: a.skipped + b.skipped,
    answered: a.answered + b.answered,
    p50: quantile(latencies, 0.5),
    p99: quantile(latencies, 0.99),
  };
};

/**
 * Attack 3: (a) Counter.Increment with a fixed call_id; a System.Sleep of 8 s with its own call_id; (b) a flood of
 * distinct call_ids at full rate for the phase (at least --flood calls), the Sleep's duplicate sent once the flood
 * has been answered STORE_SIZE + 1 times; (c) the counter call retried with the same call_id and body.
 */
async function idempotencyAttack(server, monitor, seconds, signal) {
  // With authentication on, the victim and the flooder are two principals; off, both are `anonymous`.
  const authenticated = Object.keys(server.legitHeaders).length > 0;
  const victim = authenticated ? await bearer("victim") : {};
  const flooder = authenticated ? await bearer("flooder") : {};
  const counterBody = { tool_id: "Counter.Increment", call_id: `hostile-counter-${RUN}`, input: { by: 1 } };
  const sleepBody = { tool_id: "System.Sleep", call_id: `hostile-sleep-${RUN}`, input: { ms: SLEEP_MS } };
  const first = await call(server, counterBody, victim);
  const sleep = call(server, sleepBody, victim);
  await new Promise((resolve) => setTimeout(resolve, 200)); // let the Sleep claim its call_id first
  let duplicate;
  let duplicateAfter;
  const onAnswer = (answers) => {
    if (answers === STORE_SIZE + 1 && !duplicate) {
      duplicateAfter = answers;
      duplicate = call(server, sleepBody, victim);
    }
  };
  const floodRequest = json({ tool_id: "Calculator.Add", call_id: "hostile-flood-[<id>]", input: { a: 1, b: 2 } });
  floodRequest.headers = { ...floodRequest.headers, ...flooder };
  const floods = [
    await cannon(
      server,
      monitor,
      { connections: CONNECTIONS, duration: seconds, requests: [floodRequest] },
      { signal, onAnswer },
    ),
  ];
  let answered = floods[0].answered;
  if (answered < FLOOD_MIN && !signal.aborted) {
    const more = (n) => onAnswer(answered + n);
    const amount = Math.max(CONNECTIONS, FLOOD_MIN - answered);
    floods.push(
      await cannon(
        server,
        monitor,
        { connections: CONNECTIONS, amount, requests: [floodRequest] },
        { signal, onAnswer: more },
      ),
    );
    answered += floods[1].answered;
  }
  if (!duplicate) {
    duplicateAfter = answered;
    duplicate = call(server, sleepBody, victim);
  }
  const retry = await call(server, counterBody, victim);
  const [sleepFirst, sleepDup] = await Promise.all([sleep, duplicate]);
  const codes = {};
  for (const flood of floods) {
    for (const [code, n] of Object.entries(flood.codes)) {
      codes[code] = (codes[code] ?? 0) + n;
    }
  }
  return { first, retry, sleepFirst, sleepDup, duplicateAfter, codes, answered, floodSeconds: floods[0].seconds };
}

/** The issue's wide body: 60,000 keys in `input` (878 KB); the server's value bound refuses it before parsing. */
const wide60k = (() => {
  const input = { a: 1, b: 2 };
  for (let i = 0; i < 60_000; i++) {
    input[`k${i}`] = i;
  }
  return [Buffer.from(JSON.stringify({ tool_id: "Calculator.Add", input }))];
})();
/** The costliest body within the default bounds: 9,500 keys of 100 characters (1 MiB, under 10,000 values). */
const wideAtBounds = (() => {
  const input = { a: 1, b: 2 };
  for (let i = 0; i < 9_500; i++) {
    input[`${"k".repeat(94)}${String(i).padStart(6, "0")}`] = i;
  }
  return [Buffer.from(JSON.stringify({ tool_id: "Calculator.Add", input }))];
})();
/** Attack 4: one connection sending wide bodies back to back, as fast as the answers come. */
const wideAttack = (parts) => async (server, monitor, seconds, signal) => {
  const stats = await attacker(server, monitor, { parts: () => parts, connections: 1, seconds, signal });
  return { ...stats, p50: quantile(stats.latencies, 0.5), p99: quantile(stats.latencies, 0.99) };
};

/**
 * Attack 5: System.Sleep calls (30 s) whose clients hang up as soon as the request is written, `ORPHANS` of them
 * from 64 sockets at a time; with `callIds`, each with a new call_id (such runs go on: the server bounds them).
 * Then a victim on another address calls with a call_id: it must be served, not refused for a full store.
 */
const ORPHANS = 15_000;
const orphanAttack = (callIds) => async (server, monitor, seconds, signal) => {
  const { hostname, port } = new URL(server.url);
  const deadline = Date.now() + seconds * 1000;
  let sent = 0;
  let failed = 0;
  const one = () =>
    new Promise((resolve) => {
      const body = JSON.stringify({
        tool_id: "System.Sleep",
        ...(callIds ? { call_id: `orphan-${RUN}-${sent}` } : {}),
        input: { ms: 30_000 },
      });
      sent++;
      const socket = net.connect({ host: hostname, port: Number(port), localAddress: ATTACKER_ADDRESS });
      socket.once("error", () => {
        failed++;
        resolve();
      });
      socket.once("connect", () => {
        socket.write(
          `POST /tools/call HTTP/1.1\r\nHost: ${hostname}:${port}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
          () => {
            // Long enough for the server to read the call and start its run, then gone.
            setTimeout(() => {
              socket.destroy();
              monitor.attack();
              resolve();
            }, 20);
          },
        );
      });
    });
  await Promise.all(
    Array.from({ length: 64 }, async () => {
      while (sent < ORPHANS && Date.now() < deadline && !signal.aborted) {
        await one();
      }
    }),
  );
  const victim = await call(server, { tool_id: "Calculator.Add", call_id: `victim-${RUN}`, input: { a: 1, b: 2 } });
  return { sent, failed, victim: victim.status, victimText: victim.text.slice(0, 160) };
};

/**
 * Attack 6: one principal (a JWT) starts challenges for a new user_id each, at full rate; then another principal's
 * Gmail call must still get its own challenge (400 with missing_requirements), never a 503.
 */
async function challengeFillAttack(server, monitor, seconds, signal) {
  const filler = await bearer("filler");
  const request = json({ tool_id: "Gmail.GetEmails", input: {}, context: { user_id: "fill-[<id>]" } });
  request.headers = { ...request.headers, ...filler };
  const flood = await cannon(
    server,
    monitor,
    { connections: CONNECTIONS, duration: seconds, requests: [request] },
    { signal },
  );
  const victim = await call(
    server,
    { tool_id: "Gmail.GetEmails", input: {}, context: { user_id: "victim-user" } },
    await bearer("victim"),
  );
  return { ...flood, victim: victim.status, victimText: victim.text.slice(0, 160) };
}

/**
 * Attack 7: `SLOW_SOCKETS` connections from the attacker's address that (a) trickle header bytes, one a second,
 * or (b) send one whole request, then sit idle; each is reopened a second after the server closes it. Meanwhile a
 * prober on 127.0.0.1 asks GET /health every 100 ms (2 s timeout each): how many answers come back, how fast.
 */
const SLOW_SOCKETS = 1_100;
const slowlorisAttack = (mode) => async (server, _monitor, seconds, signal) => {
  const { hostname, port } = new URL(server.url);
  const deadline = Date.now() + seconds * 1000;
  const live = new Set();
  let opened = 0;
  let closedByServer = 0;
  const open = () => {
    if (Date.now() >= deadline || signal.aborted) {
      return;
    }
    opened++;
    const socket = net.connect({ host: hostname, port: Number(port), localAddress: ATTACKER_ADDRESS });
    live.add(socket);
    let timer;
    socket.on("error", () => {});
    socket.on("data", () => {});
    socket.once("close", () => {
      clearInterval(timer);
      live.delete(socket);
      closedByServer++;
      // Reopened a second later, as the issue's attacker did ("reopened every second").
      setTimeout(open, 1_000);
    });
    socket.once("connect", () => {
      if (mode === "idle") {
        socket.write(`GET /health HTTP/1.1\r\nHost: ${hostname}:${port}\r\n\r\n`);
        return;
      }
      socket.write(`GET /health HTTP/1.1\r\nHost: ${hostname}:${port}\r\n`);
      timer = setInterval(() => socket.write("X"), 1_000);
    });
  };
  // In batches of 100 a few milliseconds apart: a burst of 1,100 SYNs at once would overflow the listen backlog
  // (511), a kernel matter no server code changes, and stall every client's connect by a second.
  for (let i = 0; i < SLOW_SOCKETS; i += 100) {
    for (let j = i; j < Math.min(SLOW_SOCKETS, i + 100); j++) {
      open();
    }
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  const probes = { ok: 0, failed: 0, latencies: [] };
  while (Date.now() < deadline && !signal.aborted) {
    const sent = performance.now();
    try {
      const response = await fetch(`${server.url}/health`, { signal: AbortSignal.timeout(2_000) });
      await response.text();
      if (response.status === 200) {
        probes.ok++;
        probes.latencies.push(performance.now() - sent);
      } else {
        probes.failed++;
      }
    } catch {
      probes.failed++;
    }
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  const stillOpen = live.size;
  for (const socket of live) {
    socket.destroy();
  }
  return {
    opened,
    closedByServer: closedByServer - stillOpen,
    stillOpen,
    probes: { ...probes, p50: quantile(probes.latencies, 0.5), p99: quantile(probes.latencies, 0.99) },
    codes: {},
  };
};

// ---- issue 34: a few addresses filling the server (F1), costly calls spread over addresses (F4) ------------------
/** The loopback addresses `127.0.0.2` ... for `count` attackers (the legitimate client stays on 127.0.0.1). */
const attackerAddresses = (count) => Array.from({ length: count }, (_, i) => `127.0.0.${i + 2}`);

/**
 * What the slot-holding attackers share: `perAddress` sockets from each of `addresses`, opened at once, each reopened
 * a second after it closes; `ready` once each has settled (held its slot, or failed to) the first time; all destroyed
 * once `signal` aborts. `open(from, settle)` makes one socket, with its own listeners, and calls `settle` once it
 * holds its slot. Resolves with how many were still open at the end.
 */
async function holdSlots({ addresses, perAddress, signal, ready }, open) {
  const live = new Set();
  const timers = new Set();
  const total = addresses.length * perAddress;
  let settled = 0;
  const start = (from, first) => {
    if (signal.aborted) {
      return;
    }
    let unsettled = first;
    const settle = () => {
      if (unsettled) {
        unsettled = false;
        if (++settled === total) {
          ready();
        }
      }
    };
    const socket = open(from, settle);
    live.add(socket);
    socket.once("close", () => {
      settle();
      live.delete(socket);
      if (!signal.aborted) {
        const timer = setTimeout(() => {
          timers.delete(timer);
          start(from, false);
        }, 1_000);
        timers.add(timer);
      }
    });
  };
  for (const from of addresses) {
    for (let i = 0; i < perAddress; i++) {
      start(from, true);
    }
  }
  if (!signal.aborted) {
    await once(signal, "abort");
  }
  ready();
  for (const timer of timers) {
    clearTimeout(timer);
  }
  const stillOpen = live.size;
  for (const socket of live) {
    socket.destroy();
  }
  return stillOpen;
}

/**
 * Sockets that hold a slot each, `perAddress` from each of `addresses`, opened at once, each reopened a second after
 * the server closes it: `idle` sends nothing; `trickle` begins a request and sends a header line a second (slowloris).
 * It calls `ready` once every socket has connected (or failed to), and runs until `signal` aborts.
 */
const slotHolders =
  (addresses, perAddress, mode) =>
  async (server, _monitor, { signal, ready }) => {
    const { hostname, port } = new URL(server.url);
    let opened = 0;
    let closedByServer = 0;
    const stillOpen = await holdSlots({ addresses, perAddress, signal, ready }, (from, settle) => {
      opened++;
      const socket = net.connect({ host: hostname, port: Number(port), localAddress: from });
      let ticker;
      socket.on("error", () => {});
      socket.on("data", () => {});
      socket.once("connect", () => {
        settle();
        if (mode === "trickle") {
          socket.write(`GET /health HTTP/1.1\r\nHost: ${hostname}:${port}\r\n`);
          ticker = setInterval(() => socket.write("X-Slow: 1\r\n"), 1_000);
        }
      });
      socket.once("close", () => {
        clearInterval(ticker);
        if (!signal.aborted) {
          closedByServer++;
        }
      });
      return socket;
    });
    return { opened, closedByServer, stillOpen, codes: {} };
  };

/**
 * Held calls: `perAddress` connections from each of `addresses`, each sending one System.Sleep of 60 s (cut by the
 * demo's 30 s tool limit) and reopened a second after it is answered or closed. `ready` once every call is sent.
 */
const heldCalls =
  (addresses, perAddress) =>
  async (server, monitor, { signal, ready }) => {
    const { hostname, port } = new URL(server.url);
    const body = JSON.stringify({ tool_id: "System.Sleep", input: { ms: 60_000 } });
    const request = `POST /tools/call HTTP/1.1\r\nHost: ${hostname}:${port}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;
    const codes = {};
    let sent = 0;
    let closedByServer = 0;
    const stillOpen = await holdSlots({ addresses, perAddress, signal, ready }, (from, settle) => {
      const socket = net.connect({ host: hostname, port: Number(port), localAddress: from });
      let answered = false;
      socket.on("error", () => {});
      socket.once("connect", () => {
        sent++;
        socket.write(request, settle);
      });
      socket.on("data", (chunk) => {
        if (!answered) {
          answered = true;
          const code = /^HTTP\/1\.1 (\d{3})/.exec(String(chunk))?.[1] ?? "garbled";
          codes[code] = (codes[code] ?? 0) + 1;
          monitor.attack();
          socket.destroy();
        }
      });
      socket.once("close", () => {
        if (!signal.aborted && !answered) {
          closedByServer++;
        }
      });
      return socket;
    });
    return { sent, closedByServer, stillOpen, codes };
  };

/**
 * One JWT principal's long polls of its own running call (a System.Sleep of 60 s, which reports progress every 100
 * ms): `perAddress` polls from each of `addresses` on keep-alive connections, each sent again as soon as it is
 * answered; a 429 is retried after its Retry-After, a failed connection after a second. `ready` once every poll is
 * sent.
 */
const longPolls =
  (addresses, perAddress) =>
  async (server, monitor, { signal, ready }) => {
    const poller = await bearer("poller");
    const callId = `poller-${RUN}`;
    const accepted = await call(
      server,
      { tool_id: "System.Sleep", call_id: callId, input: { ms: 60_000 } },
      { ...poller, "oxp-extensions": "tasks", prefer: "respond-async" },
    );
    const codes = { [`POST ${accepted.status}`]: 1 };
    // Every slot's pause listens to the phase's end.
    setMaxListeners(2 * addresses.length * perAddress, signal);
    /** A wait of `ms` that ends early when the phase does, so that every slot's loop ends with it. */
    const pause = (ms) =>
      new Promise((resolve) => {
        const timer = setTimeout(done, ms);
        function done() {
          clearTimeout(timer);
          signal.removeEventListener("abort", done);
          resolve();
        }
        signal.addEventListener("abort", done, { once: true });
      });
    let sent = 0;
    let settled = 0;
    const total = addresses.length * perAddress;
    const agents = addresses.map(
      (localAddress) => new http.Agent({ keepAlive: true, maxSockets: perAddress, localAddress }),
    );
    const pollOnce = (agent) =>
      new Promise((resolve) => {
        sent++;
        const req = http.request(
          `${server.url}/tools/calls/${callId}`,
          { agent, headers: { ...poller, "oxp-extensions": "tasks", prefer: "wait=30" } },
          (res) => {
            res.resume();
            res.once("end", () => resolve({ status: res.statusCode, retryAfter: Number(res.headers["retry-after"]) }));
            res.once("error", () => resolve({ status: "cut" }));
          },
        );
        req.once("error", (error) => resolve({ status: error.code ?? error.name }));
        req.end();
      });
    const slot = async (agent, first) => {
      while (!signal.aborted) {
        const polled = pollOnce(agent);
        if (first) {
          first = false;
          if (++settled === total) {
            ready();
          }
        }
        const { status, retryAfter } = await polled;
        if (signal.aborted) {
          break;
        }
        codes[status] = (codes[status] ?? 0) + 1;
        monitor.attack();
        if (status === 429) {
          await pause((retryAfter > 0 ? retryAfter : 1) * 1000);
        } else if (typeof status !== "number") {
          await pause(1_000);
        }
      }
    };
    const slots = agents.flatMap((agent) => Array.from({ length: perAddress }, () => slot(agent, true)));
    if (!signal.aborted) {
      await once(signal, "abort");
    }
    ready();
    for (const agent of agents) {
      agent.destroy();
    }
    await Promise.allSettled(slots);
    return { sent, codes };
  };

/** F4: valid 1 MB calls (Greeting.Hello, no call_id) back to back on 8 connections, from `addresses` in turn. */
const spreadCalls = (addresses) => async (server, monitor, seconds, signal) => {
  const parts = () => [Buffer.from(`{"tool_id":"Greeting.Hello","input":{"name":"`), nameBuf, Buffer.from(`"}}`)];
  const runs = await Promise.all(
    Array.from({ length: 8 }, (_, i) =>
      attacker(server, monitor, {
        parts,
        connections: 1,
        seconds,
        signal,
        localAddress: addresses[i % addresses.length],
      }),
    ),
  );
  const codes = {};
  for (const run of runs) {
    for (const [code, n] of Object.entries(run.codes)) {
      codes[code] = (codes[code] ?? 0) + n;
    }
  }
  return {
    codes,
    sent: runs.reduce((sum, run) => sum + run.sent, 0),
    answered: runs.reduce((sum, run) => sum + run.answered, 0),
  };
};

// ---- report ----------------------------------------------------------------------------------------------------
const started = Date.now();
const clock = () => `${((Date.now() - started) / 1000).toFixed(0)} s`;
const int = (n) => (Number.isFinite(n) ? Math.round(n).toLocaleString("en-US") : "-");
const mb = (n) => (Number.isFinite(n) ? `${Math.round(n)} MB` : "-");
const ms = (n) => (Number.isFinite(n) ? `${n < 10 ? n.toFixed(1) : Math.round(n)} ms` : "-");
const pct = (n) => (Number.isFinite(n) ? `${Math.round(n * 100)}%` : "-");
const ratio = (a, b) => {
  if (!Number.isFinite(a) || !Number.isFinite(b) || b <= 0) {
    return "-";
  }
  const r = a / b;
  return `${r > 0 && r < 0.1 ? r.toPrecision(2) : r.toFixed(2)}x`;
};
const codesText = (codes) =>
  Object.entries(codes ?? {})
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([code, n]) => `${code}: ${int(n)}`)
    .join(", ") || "none";

function printPhase(p) {
  console.log(`\n== ${p.title} (${p.seconds} s)`);
  if (p.legit) {
    const l = p.legit;
    const extra = [
      l.non2xx && `non-2xx ${int(l.non2xx)}`,
      l.errors && `errors ${int(l.errors)} (timeouts ${int(l.timeouts)})`,
    ]
      .filter(Boolean)
      .join(", ");
    console.log(
      `  legit Calculator.Add: ${int(l.rps)} calls/s  p50 ${ms(l.p50)}  p99 ${ms(l.p99)}  (${int(l.ok)} ok in ${l.seconds} s${extra ? `; ${extra}` : ""})`,
    );
  }
  const r = p.rss;
  console.log(
    `  server RSS: start ${mb(r.start)}  peak ${mb(r.peak)}  end ${mb(r.end)}  (peak/start ${ratio(r.peak, r.start)}); server CPU ${pct(r.cpu)} of one core`,
  );
  if (p.death) {
    console.log(`  SERVER DIED at t=${p.death.at.toFixed(1)} s (exit code ${p.death.code}, signal ${p.death.signal})`);
    const { head, tail } = p.stderrTail;
    const all = (tail.startsWith(head) ? tail : `${head}\n...\n${tail}`).split("\n");
    const shown = all.length > 12 ? [...all.slice(0, 5), "...", ...all.slice(-6)] : all;
    console.log(`  stderr (first lines and tail):\n    ${shown.join("\n    ").trim() || "(empty)"}`);
  } else {
    console.log("  server alive at the end");
  }
  const step = Math.max(1, Math.round(p.seconds / 10));
  console.log(
    `  ${"t (s)".padStart(7)}${"RSS".padStart(10)}${"CPU".padStart(7)}${"legit ok/s".padStart(12)}${"attack answers/s".padStart(18)}`,
  );
  for (const row of p.monitor.timeline(step)) {
    console.log(
      `  ${row.t.toFixed(1).padStart(7)}${mb(row.rss).padStart(10)}${pct(row.cpu).padStart(7)}${int(row.legit).padStart(12)}${(p.attack ? row.attack.toFixed(1) : "-").padStart(18)}`,
    );
  }
}

const seconds = (x) => `${(x / 1000).toFixed(2)} s`;

async function main() {
  console.log(
    `OXP hostile clients: ${DURATION_S} s per attack, loopback, ${process.version}, ${os.cpus().length} CPUs, ` +
      `legit load ${CONNECTIONS} connections of Calculator.Add from 127.0.0.1, attackers from ${ATTACKER_ADDRESS}, ${ADAPTER} adapter`,
  );
  console.log(`demo: ${DEMO} (child process${HEAP_MB ? `, --max-old-space-size=${HEAP_MB}` : ", default heap"})`);

  const baseline = await phase("Baseline: legitimate traffic only", DURATION_S);
  printPhase(baseline);

  let memory;
  let challenges;
  let firstRate = Number.NaN;
  let lastRate = Number.NaN;
  if (runs("memory") || runs("challenges")) {
    memory = await phase(
      `Attack 1a, memory: Greeting.Hello with a ${int(NAME_CHARS)}-char name and a new call_id each, 4 connections`,
      DURATION_S,
      memoryAttack,
    );
    printPhase(memory);
    console.log(
      `  attack: ${int(memory.attack.sent)} sent, ${int(memory.attack.answered)} answered (${codesText(memory.attack.codes)}), ` +
        `${int(memory.attack.answered / memory.monitor.seconds)}/s, latency p50 ${ms(memory.attack.p50)} p99 ${ms(memory.attack.p99)}`,
    );

    challenges = await phase(
      `Attack 1b, memory: Gmail.GetEmails with a new user_id each (a challenge each), ${CONNECTIONS} connections`,
      HALF_S,
      challengeAttack,
    );
    printPhase(challenges);
    const rates = challenges.monitor.timeline(1).map((row) => row.attack);
    const edge = Math.max(1, Math.floor(rates.length / 5));
    firstRate = rates.slice(0, edge).reduce((a, b) => a + b, 0) / edge;
    lastRate = rates.slice(-edge).reduce((a, b) => a + b, 0) / edge;
    console.log(
      `  attack: ${int(challenges.attack.answered)} answered (${codesText(challenges.attack.codes)}), ` +
        `${int(challenges.attack.answered / challenges.monitor.seconds)}/s; first fifth ${int(firstRate)}/s, last fifth ${int(lastRate)}/s (${ratio(lastRate, firstRate)})`,
    );
  }
  let cpuPaced;
  let cpuFull;
  if (runs("cpu")) {
    cpuPaced = await phase(
      `Attack 2a, CPU: 2 attackers x 3.5 r/s of "Greeting.Hello@" + ${int(VERSION_DIGITS)} nines`,
      DURATION_S,
      cpuAttack(3.5),
    );
    printPhase(cpuPaced);
    const cpuText = (a) =>
      `  attack: ${int(a.sent)} sent (${int(a.skipped)} ticks skipped: 8 in flight), ${int(a.answered)} answered (${codesText(a.codes)}), latency p50 ${ms(a.p50)} p99 ${ms(a.p99)}`;
    console.log(cpuText(cpuPaced.attack));

    cpuFull = await phase(
      "Attack 2b, CPU: the same at full rate (2 attackers x 2 connections, back to back)",
      HALF_S,
      cpuAttack(undefined),
    );
    printPhase(cpuFull);
    console.log(cpuText(cpuFull.attack));
  }
  const idempotencyPhase = async (label, auth) => {
    const idem = await phase(
      `Attack 3${label}, idempotency: call_id store flooded (${CONNECTIONS} connections, at least ${int(FLOOD_MIN)} distinct call_ids), ${auth ? "the flooder and the victim are two principals (JWT subs)" : "authentication off: flooder and victim are the one principal"}`,
      DURATION_S,
      idempotencyAttack,
      { auth },
    );
    printPhase(idem);
    const i = idem.attack;
    const value = (r) => r.body?.value?.value;
    const counterMoved = value(i.first) !== undefined && value(i.retry) !== value(i.first);
    const firstEnd = i.sleepFirst.done;
    const dupTook = i.sleepDup.done - i.sleepDup.sent;
    const dupRanAgain =
      i.sleepDup.text !== i.sleepFirst.text ||
      i.sleepDup.done - firstEnd > 1_000 ||
      i.sleepDup.status !== i.sleepFirst.status;
    const firstRunning = i.sleepDup.sent < firstEnd;
    console.log(`  flood: ${int(i.answered)} answered (${codesText(i.codes)})`);
    console.log(
      `  (a) Counter.Increment call_id=${i.first.body?.call_id ?? "?"}: HTTP ${i.first.status}, value ${value(i.first) ?? i.first.text.slice(0, 200)}`,
    );
    console.log(
      `  (c) same call retried after the flood: HTTP ${i.retry.status}, value ${value(i.retry) ?? i.retry.text.slice(0, 200)}; ` +
        `response identical: ${i.retry.text === i.first.text ? "yes" : "no"} -> counter ${counterMoved ? "MOVED (ran twice)" : "did not move"}`,
    );
    console.log(
      `  System.Sleep ${SLEEP_MS} ms: first HTTP ${i.sleepFirst.status} after ${seconds(i.sleepFirst.done - i.sleepFirst.sent)} ${i.sleepFirst.text.slice(0, 120)}`,
    );
    console.log(
      `  duplicate sent after ${int(i.duplicateAfter)} flood answers, ${seconds(i.sleepDup.sent - i.sleepFirst.sent)} after the first ` +
        `(first ${firstRunning ? "still running" : "already finished"}): HTTP ${i.sleepDup.status} after ${seconds(dupTook)}, ` +
        `ended ${seconds(i.sleepDup.done - firstEnd)} after the first ${i.sleepDup.text.slice(0, 120)}`,
    );
    console.log(
      `  -> the Sleep ${dupRanAgain ? "RAN TWICE (different response or later end)" : "ran once (same response, ended with the first)"}`,
    );
    const verdict =
      `counter ${counterMoved ? "MOVED" : "did not move"} (${value(i.first) ?? "?"} -> ${value(i.retry) ?? "?"}); ` +
      `8 s Sleep ${dupRanAgain ? "RAN TWICE" : "ran once"} (duplicate answered in ${seconds(dupTook)})`;
    return { idem, verdict };
  };
  const twoPrincipals = runs("idempotency") ? await idempotencyPhase("a", true) : undefined;
  const onePrincipal = runs("idempotency") ? await idempotencyPhase("b", false) : undefined;

  const wideText = (w) =>
    `  attack: ${int(w.sent)} sent, ${int(w.answered)} answered (${codesText(w.codes)}), latency p50 ${ms(w.p50)} p99 ${ms(w.p99)}`;
  let wideIssue;
  let wideBounds;
  if (runs("wide")) {
    wideIssue = await phase(
      "Attack 4a, CPU: one connection of 60,000-key bodies (878 KB) back to back",
      DURATION_S,
      wideAttack(wide60k),
    );
    printPhase(wideIssue);
    console.log(wideText(wideIssue.attack));
    wideBounds = await phase(
      `Attack 4b, CPU: one connection of 1 MiB bodies at the bounds (9,500 keys of 100 characters) back to back`,
      DURATION_S,
      wideAttack(wideAtBounds),
    );
    printPhase(wideBounds);
    console.log(wideText(wideBounds.attack));
  }

  const orphanText = (o) =>
    `  attack: ${int(o.sent)} calls sent and hung up on (${int(o.failed)} failed to connect); then a victim's call with a call_id: HTTP ${o.victim} ${o.victimText}`;
  let orphansPlain;
  let orphansKeyed;
  if (runs("orphans")) {
    orphansPlain = await phase(
      `Attack 5a, orphans: ${int(ORPHANS)} System.Sleep (30 s) calls without call_id, clients hang up at once`,
      HALF_S,
      orphanAttack(false),
    );
    printPhase(orphansPlain);
    console.log(orphanText(orphansPlain.attack));
    orphansKeyed = await phase(
      `Attack 5b, orphans: ${int(ORPHANS)} System.Sleep (30 s) calls with a new call_id each, clients hang up at once`,
      HALF_S,
      orphanAttack(true),
    );
    printPhase(orphansKeyed);
    console.log(orphanText(orphansKeyed.attack));
  }

  let challengeFill;
  if (runs("challenge-fill")) {
    challengeFill = await phase(
      `Attack 6, challenges: one JWT principal starts a challenge per new user_id at full rate (${CONNECTIONS} connections)`,
      HALF_S,
      challengeFillAttack,
      { auth: true },
    );
    printPhase(challengeFill);
    const c = challengeFill.attack;
    console.log(
      `  attack: ${int(c.answered)} answered (${codesText(c.codes)}); then another principal's Gmail call: HTTP ${c.victim} ${c.victimText}`,
    );
  }

  const slowText = (a) =>
    `  attack: ${int(a.opened)} sockets opened, ${int(a.closedByServer)} closed by the server, ${int(a.stillOpen)} open at the end; ` +
    `/health probes from 127.0.0.1: ${int(a.probes.ok)} ok, ${int(a.probes.failed)} failed, p50 ${ms(a.probes.p50)} p99 ${ms(a.probes.p99)}`;
  let slowTrickle;
  let slowIdle;
  if (runs("slowloris")) {
    slowTrickle = await phase(
      `Attack 7a, slowloris: ${int(SLOW_SOCKETS)} sockets trickling a header byte a second, reopened a second after being closed`,
      HALF_S,
      slowlorisAttack("trickle"),
    );
    printPhase(slowTrickle);
    console.log(slowText(slowTrickle.attack));
    slowIdle = await phase(
      `Attack 7b, slowloris: ${int(SLOW_SOCKETS)} sockets idle after one request, reopened a second after being closed`,
      HALF_S,
      slowlorisAttack("idle"),
    );
    printPhase(slowIdle);
    console.log(slowText(slowIdle.attack));
  }

  // Issue 34. F1: a few addresses fill the server's 1,024 connections, then a fresh legitimate client arrives. F4: the
  // same costly load from 1 address and spread over 8.
  const f1Text = (a) =>
    `  attack: ${Object.entries(a)
      .filter(([key]) => key !== "codes")
      .map(([key, n]) => `${key} ${int(n)}`)
      .join(", ")}; answers: ${codesText(a.codes)}`;
  const issue34 = [];
  const f1Phase = async (name, title, attack, options = {}) => {
    if (!runs(name)) {
      return;
    }
    const result = await phase(title, HALF_S, attack, { fresh: true, ...options });
    printPhase(result);
    console.log(f1Text(result.attack));
    issue34.push({ name, result, auth: options.auth === true });
  };
  let baselineAuth;
  if (runs("f1-polls")) {
    baselineAuth = await phase("Baseline for F1 long polls: legitimate traffic only, with a JWT", HALF_S);
    printPhase(baselineAuth);
  }
  await f1Phase(
    "f1-burst",
    "F1a, connections: 4 addresses x 256 idle sockets in a burst (reopened a second after closed), then a fresh client",
    slotHolders(attackerAddresses(4), 256, "idle"),
  );
  await f1Phase(
    "f1-held",
    "F1b, connections: 8 addresses x 128 held System.Sleep calls (reopened a second after closed), then a fresh client",
    heldCalls(attackerAddresses(8), 128),
  );
  await f1Phase(
    "f1-polls",
    "F1c, connections: one JWT principal's 1,024 long polls of its own call from 4 addresses, then a fresh client",
    longPolls(attackerAddresses(4), 256),
    { auth: true },
  );
  await f1Phase(
    "f1-slowloris",
    "F1d, connections: 16 addresses x 64 sockets trickling a header line a second (slowloris), then a fresh client",
    slotHolders(attackerAddresses(16), 64, "trickle"),
  );
  let spreadOne;
  let spreadEight;
  if (runs("f4")) {
    spreadOne = await phase(
      "F4a, fairness: valid 1 MB calls (Greeting.Hello) on 8 connections from 1 address",
      HALF_S,
      spreadCalls(attackerAddresses(1)),
    );
    printPhase(spreadOne);
    console.log(wideText(spreadOne.attack));
    spreadEight = await phase(
      "F4b, fairness: the same from 8 addresses, one connection each",
      HALF_S,
      spreadCalls(attackerAddresses(8)),
    );
    printPhase(spreadEight);
    console.log(wideText(spreadEight.attack));
  }

  const base = baseline.legit;
  const rows = [
    ["1a memory: 1 MB names", memory],
    ["1b memory: challenges", challenges],
    ["2a CPU: 2 x 3.5 r/s", cpuPaced],
    ["2b CPU: full rate", cpuFull],
    ["3a idempotency, 2 principals", twoPrincipals?.idem],
    ["3b idempotency, auth off", onePrincipal?.idem],
    ["4a wide: 60,000 keys", wideIssue],
    ["4b wide: 1 MiB at the bounds", wideBounds],
    ["5a orphans, no call_id", orphansPlain],
    ["5b orphans, call_ids", orphansKeyed],
    ["6 challenges, 2 principals", challengeFill],
    ["7a slowloris: trickle", slowTrickle],
    ["7b slowloris: idle", slowIdle],
  ].filter(([, p]) => p !== undefined);
  console.log(
    `\n== Summary: ratios to the baseline (${int(base.rps)} legit calls/s, p99 ${ms(base.p99)}, RSS peak ${mb(baseline.rss.peak)})`,
  );
  console.log("  (legit/s counts successful calls over the time the server was up; a dead server ends its phase)");
  console.log(
    `  ${"phase".padEnd(30)}${"legit/s".padStart(9)}${"ratio".padStart(8)}${"p99".padStart(10)}${"ratio".padStart(9)}${"RSS start".padStart(11)}${"peak".padStart(10)}${"end".padStart(10)}  server`,
  );
  for (const [name, p] of rows) {
    const l = p.legit;
    console.log(
      `  ${name.padEnd(30)}${int(l.rps).padStart(9)}${ratio(l.rps, base.rps).padStart(8)}${ms(l.p99).padStart(10)}${ratio(l.p99, base.p99).padStart(9)}` +
        `${mb(p.rss.start).padStart(11)}${mb(p.rss.peak).padStart(10)}${mb(p.rss.end).padStart(10)}  ${p.death ? `DIED at ${p.death.at.toFixed(1)} s` : "alive"}`,
    );
  }
  if (cpuPaced && cpuFull) {
    console.log(
      `  CPU attack: legit calls/s paced ${ratio(cpuPaced.legit.rps, base.rps)}, full rate ${ratio(cpuFull.legit.rps, base.rps)}`,
    );
  }
  if (wideIssue && wideBounds) {
    const worst = Math.min(wideIssue.legit.rps, wideBounds.legit.rps) / base.rps;
    console.log(
      `  wide bodies, one connection: legit calls/s ${ratio(wideIssue.legit.rps, base.rps)} (60,000 keys), ${ratio(wideBounds.legit.rps, base.rps)} (1 MiB at the bounds); ` +
        `target at least 0.50x: ${worst >= 0.5 ? "met" : "MISSED"}`,
    );
  }
  if (orphansPlain && orphansKeyed) {
    console.log(
      `  orphans: RSS peak ${mb(orphansPlain.rss.peak)} without call_id, ${mb(orphansKeyed.rss.peak)} with; victim's call_id call HTTP ${orphansPlain.attack.victim} / ${orphansKeyed.attack.victim}`,
    );
  }
  if (challengeFill) {
    console.log(`  challenge fill: the other principal's challenge HTTP ${challengeFill.attack.victim} (400 = served)`);
  }
  for (const [label, slow] of [
    ["trickle", slowTrickle],
    ["idle", slowIdle],
  ]) {
    if (!slow) {
      continue;
    }
    const p = slow.attack.probes;
    console.log(
      `  slowloris (${label}): /health ${pct(p.ok / Math.max(1, p.ok + p.failed))} answered, p99 ${ms(p.p99)}`,
    );
  }
  if (issue34.length > 0 || spreadOne) {
    console.log(`\n== Issue 34: the fresh legitimate client's rate, as a ratio to no attack (${ADAPTER} adapter)`);
    for (const { name, result, auth } of issue34) {
      const against = auth && baselineAuth ? baselineAuth.legit : base;
      const r = result.legit.rps / against.rps;
      console.log(
        `  ${name.padEnd(14)}${int(result.legit.rps).padStart(9)} legit/s  ${ratio(result.legit.rps, against.rps).padStart(7)}` +
          ` (to ${auth ? "the JWT baseline" : "the baseline"} ${int(against.rps)}/s)  target at least 0.50x: ${r >= 0.5 ? "met" : "MISSED"}`,
      );
    }
    if (spreadOne && spreadEight) {
      const one = spreadOne.legit.rps / base.rps;
      const eight = spreadEight.legit.rps / base.rps;
      const refused = (p) => (p.attack.codes["429"] ?? 0) / Math.max(1, p.attack.answered);
      console.log(
        `  f4 1 address  ${int(spreadOne.legit.rps).padStart(9)} legit/s  ${ratio(spreadOne.legit.rps, base.rps).padStart(7)}  (attacker refused ${pct(refused(spreadOne))})`,
      );
      console.log(
        `  f4 8 addresses${int(spreadEight.legit.rps).padStart(9)} legit/s  ${ratio(spreadEight.legit.rps, base.rps).padStart(7)}  (attacker refused ${pct(refused(spreadEight))}); ` +
          `8 / 1 = ${ratio(eight, one)}, target at least 0.90x: ${eight >= 0.9 * one ? "met" : "MISSED"}`,
      );
    }
  }
  if (!memory || !challenges) {
    console.log(`  total runtime ${clock()}`);
    return;
  }
  const perCall = (memory.rss.peak - memory.rss.start) / Math.max(1, memory.attack.answered);
  console.log(
    `  memory attack: RSS peak/start ${ratio(memory.rss.peak, memory.rss.start)} (baseline ${ratio(baseline.rss.peak, baseline.rss.start)}), ` +
      `${perCall.toFixed(2)} MB more per answered 1 MB call (${int(memory.attack.answered)} answered)` +
      `${memory.death ? `, server died at ${memory.death.at.toFixed(1)} s` : ""}; ` +
      `challenges: ${int(challenges.attack.codes["400"] ?? 0)} started, RSS peak/start ${ratio(challenges.rss.peak, challenges.rss.start)}, ` +
      `attacker rate last/first fifth ${ratio(lastRate, firstRate)}`,
  );
  if (twoPrincipals && onePrincipal) {
    console.log(`  idempotency, two principals: ${twoPrincipals.verdict}`);
    console.log(`  idempotency, authentication off (one principal): ${onePrincipal.verdict}`);
    console.log(
      "  (3a's legitimate load authenticates with a JWT too, so its ratio includes the cost of verifying it)",
    );
  }
  console.log(`  total runtime ${clock()}`);
}

try {
  for (const adapter of ADAPTERS) {
    ADAPTER = adapter;
    await main();
  }
} catch (error) {
  console.error(`hostile-clients failed: ${error.stack ?? error}`);
  process.exitCode = 1;
} finally {
  killAll();
}
